import type postgres from 'postgres';
import type { Actor, Principal } from './actor.js';
import { createAgent, createHuman, type NewAgent, type NewHuman } from './principals.js';
import { issueToken } from './tokens.js';

/**
 * A new agent and its first token, committed together: the token is shown once and never
 * stored, so an agent without it could not be used, and a token without its agent is nothing.
 */
export async function vendAgent(
  sql: postgres.Sql,
  actor: Actor,
  input: NewAgent,
): Promise<{ agent: Principal; token: string }> {
  const { principal: agent, token } = await withFirstToken(sql, (tx) =>
    createAgent(tx, actor, input),
  );
  return { agent, token };
}

/** A new human and their first token, committed together (as vendAgent). */
export async function vendHuman(
  sql: postgres.Sql,
  actor: Actor,
  input: NewHuman,
): Promise<{ human: Principal; token: string }> {
  const { principal: human, token } = await withFirstToken(sql, (tx) =>
    createHuman(tx, actor, input),
  );
  return { human, token };
}

async function withFirstToken(
  sql: postgres.Sql,
  create: (tx: postgres.TransactionSql) => Promise<Principal>,
): Promise<{ principal: Principal; token: string }> {
  return sql.begin(async (tx) => {
    const principal = await create(tx);
    return { principal, token: await issueToken(tx, principal.id) };
  });
}
