import type postgres from 'postgres';

/** The NOTIFY channel of rings one process took for another's sessions. */
const ringChannel = (schema: string) => `${schema}.rings`;

/** Hands a ring to the process of its session. */
export async function sendRing(sql: postgres.Sql, schema: string, payload: string): Promise<void> {
  await sql.notify(ringChannel(schema), payload);
}

/**
 * Listens for rings other processes took for this one's sessions; `onListen` runs after every
 * (re)LISTEN, since a ring sent while the connection was down is lost.
 */
export function listenForRings(
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql,
  schema: string,
  onRing: (payload: string) => void,
  onListen: () => void,
): Promise<postgres.ListenMeta> {
  return direct.listen(ringChannel(schema), onRing, onListen);
}
