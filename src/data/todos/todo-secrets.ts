import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import type { Secret } from '../../contract/secret.js';
import { createWithholder, type Withholder } from '../../contract/withhold-secrets.js';
import { visibleTo, type Actor } from '../actor.js';
import { notFound } from '../ledger-error.js';
import { eventInsert } from './record-event.js';

/** Seals a credential under the server key (src/platform/secrets/secret-box.ts). */
export type Seal = (value: string) => Buffer;
/** Opens what Seal sealed. */
export type Unseal = (sealed: Buffer) => string;
/** Both, under one key: the server's secret box (src/platform/secrets/secret-box.ts). */
export interface SecretKeeper {
  seal(value: string): Buffer;
  open(sealed: Buffer): string;
}

export interface SecretOptions {
  /**
   * Seals the credentials withheld from the todo's text, kept for `secret show`. Without it (no
   * server key) they are withheld all the same, and not kept: the text says `[secret:withheld]`.
   */
  seal?: Seal | null | undefined;
}

/** A withholder for one todo's texts: it keeps what it withholds only when it can seal it. */
export const withholderFor = ({ seal }: SecretOptions): Withholder =>
  createWithholder({ keep: Boolean(seal) });

/**
 * The CTE that keeps the withheld credentials sealed beside the todo(s) of the CTE named `t`,
 * for a statement that writes the todo: `, s as (…)`, or nothing when there are none.
 */
export function secretsInsert(db: Db, withholder: Withholder, { seal }: SecretOptions) {
  const { secrets } = withholder;
  if (!seal || secrets.length === 0) return db``;
  const rows = secrets.map(({ id, rule, value }) => ({
    id,
    rule,
    sealed: seal(value).toString('base64'),
  }));
  return db`, s as (
    insert into todo_secrets (id, todo_id, rule, sealed)
    select x.id, t.id, x.rule, decode(x.sealed, 'base64')
    from t cross join jsonb_to_recordset(${db.json(rows)}) as x(id text, rule text, sealed text))`;
}

/** What the history's row says of the credentials withheld from a todo's text: never a value. */
export function withheldData(withholder: Withholder): Record<string, unknown> | null {
  if (withholder.count === 0) return null;
  return {
    secrets: withholder.secrets.map(({ id, rule }) => ({ id, rule })),
    withheld: withholder.count,
  };
}

export type ShownSecret = Secret;

/**
 * A withheld credential's value, for whoever may read its todo (to anyone else it does not
 * exist). The fetch is recorded in the todo's history — who, and which secret; never the value —
 * before the value is handed out.
 */
export async function showSecret(
  db: Db,
  actor: Actor,
  id: string,
  unseal: Unseal,
): Promise<ShownSecret> {
  const [row] = await db<
    { id: string; todo_id: string; rule: string; sealed: Buffer; created_at: Date }[]
  >`
    select s.id, s.todo_id, s.rule, s.sealed, s.created_at from todo_secrets s
    where s.id = ${id}
      and exists (select from todos t where t.id = s.todo_id and ${visibleTo(db, actor)})`;
  if (!row) throw notFound(`secret ${id} not found`);
  const value = unseal(row.sealed);
  const todoId = Number(row.todo_id);
  await db`${eventInsert(db, {
    todoId,
    actor,
    action: 'secret_shown',
    data: { secret: row.id, rule: row.rule },
  })}`;
  return { id: row.id, todo_id: todoId, rule: row.rule, value, created_at: row.created_at };
}

/**
 * Retention: the sealed credentials of todos that finished (done, canceled, failed for good)
 * before the cutoff, `batch` at a time, each batch its own statement. Their references stay in
 * the text; a fetch then finds nothing.
 */
export async function pruneFinishedSecrets(
  sql: postgres.Sql,
  cutoff: Date,
  batch: number,
  signal?: AbortSignal,
): Promise<number> {
  let deleted = 0;
  while (!signal?.aborted) {
    const { count } = await sql`
      delete from todo_secrets where id in (
        select s.id from todo_secrets s join todos t on t.id = s.todo_id
        where (t.state in ('done', 'canceled') or (t.state = 'failed' and t.available_at is null))
          and t.updated_at < ${cutoff}
        limit ${batch} for update of s skip locked)`;
    deleted += count;
    if (count < batch) return deleted;
  }
  return deleted;
}
