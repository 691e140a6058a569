import type postgres from 'postgres';

/**
 * A reader of how far the ledger's history has come: the position of its id sequence, which
 * every change moves (every change appends a history row). Reading it is one tiny statement that
 * touches no table, so it may be polled; the sequence's name is looked up on the first read.
 * Sequences move before their transaction commits: a new position may precede what it announces.
 */
export function historyPosition(sql: postgres.Sql): () => Promise<string> {
  let sequence: string | undefined;
  return async () => {
    sequence ??= (
      await sql<{ name: string }[]>`select pg_get_serial_sequence('todo_events', 'id') as name`
    )[0]!.name;
    // The name comes from PostgreSQL itself (schema-qualified and quoted as needed).
    const [row] = await sql.unsafe<{ value: string }[]>(
      `select last_value::text || ':' || is_called::text as value from ${sequence}`,
    );
    return row!.value;
  };
}
