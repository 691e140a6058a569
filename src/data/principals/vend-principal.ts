import type postgres from 'postgres';
import type { Principal } from '../actor.js';
import { issueToken } from './tokens.js';

/**
 * A new principal (`create` adds it: createAgent, createHuman) and its first token, committed
 * together: the token is shown once and never stored, so a principal without it could not be
 * used, and a token without its principal is nothing.
 */
export async function vendPrincipal(
  sql: postgres.Sql,
  create: (tx: postgres.TransactionSql) => Promise<Principal>,
): Promise<{ principal: Principal; token: string }> {
  return sql.begin(async (tx) => {
    const principal = await create(tx);
    const kind = principal.kind === 'human' ? 'human_add' : 'agent_add';
    return { principal, token: await issueToken(tx, principal.id, kind) };
  });
}
