import postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import type { Actor, Principal, PrincipalKind } from '../actor.js';
import { conflict, forbidden, invalid, notFound } from '../ledger-error.js';
import { assertName, assertQueue } from '../validate.js';

const GITHUB_LOGIN = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}$/;

export async function findPrincipal(db: Db, name: string): Promise<Principal | undefined> {
  const [principal] = await db<Principal[]>`select * from principals where name = ${name}`;
  return principal;
}

/** The (not revoked) human with this GitHub login; logins compare case-insensitively. */
export async function findHumanByGithubLogin(
  db: Db,
  login: string,
): Promise<Principal | undefined> {
  const [human] = await db<Principal[]>`
    select * from principals
    where lower(github_login) = lower(${login}) and kind = 'human' and revoked_at is null`;
  return human;
}

/** The (not revoked) human with this id. */
export async function findHumanById(db: Db, id: number): Promise<Principal | undefined> {
  const [human] = await db<Principal[]>`
    select * from principals where id = ${id} and kind = 'human' and revoked_at is null`;
  return human;
}

export interface NewHuman {
  name: string;
  github_login?: string | null | undefined;
  is_admin?: boolean | undefined;
}

/** Humans are added by switchboard itself (first start) or by an admin. */
export async function createHuman(db: Db, actor: Actor, input: NewHuman): Promise<Principal> {
  if (actor.kind !== 'system' && !(actor.kind === 'human' && actor.principal.is_admin)) {
    throw forbidden('only an admin may add humans');
  }
  assertName(input.name);
  if (input.github_login != null && !GITHUB_LOGIN.test(input.github_login)) {
    throw invalid(`not a GitHub login: ${JSON.stringify(input.github_login.slice(0, 80))}`);
  }
  const [human] = await insertPrincipal(
    () => db<Principal[]>`
      insert into principals (name, kind, github_login, is_admin)
      values (${input.name}, 'human', ${input.github_login ?? null}, ${input.is_admin ?? false})
      returning *`,
    input.name,
  );
  return human!;
}

export interface NewAgent {
  name: string;
  queues: string[];
  /** The owning human; defaults to the human adding the agent. Only admins name someone else. */
  owner?: string | undefined;
}

export async function createAgent(db: Db, actor: Actor, input: NewAgent): Promise<Principal> {
  if (actor.kind !== 'human') throw forbidden('only a human may add agents');
  const owner = input.owner ?? actor.name;
  assertName(owner, 'owner');
  if (owner !== actor.name && !actor.principal.is_admin)
    throw forbidden('only an admin may add agents for someone else');
  assertName(input.name);
  const queues = [...new Set(input.queues)];
  if (queues.length === 0) throw invalid('an agent needs at least one queue');
  queues.forEach(assertQueue);
  const [agent] = await insertPrincipal(
    () => db<Principal[]>`
      insert into principals (name, kind, owner, queues)
      select ${input.name}, 'agent', name, ${queues}::text[]
      from principals where name = ${owner} and kind = 'human' and revoked_at is null
      returning *`,
    input.name,
  );
  if (!agent) throw invalid(`no human named ${owner}`);
  return agent;
}

/**
 * A name for a new agent made from a client's own name (`Claude Code` → `claude-code`), spelled
 * as names must be and not taken by any principal (revoked ones keep theirs): the first of
 * `name`, `name-2`, `name-3`, …. Only a suggestion: the human sees it, may change it, and
 * createAgent decides.
 */
export async function suggestAgentName(db: Db, clientName: string | undefined): Promise<string> {
  const slug = (clientName ?? '')
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+|[-._]+$/g, '')
    // Room for a suffix within the 64 characters a name may have.
    .slice(0, 56)
    .replace(/[-._]+$/, '');
  const base = slug || 'agent';
  const taken = new Set(
    (
      await db<{ name: string }[]>`
        select name from principals
        where name = ${base} or name ~ ${`^${base.replace(/\./g, '\\.')}-[0-9]+$`}`
    ).map((row) => row.name),
  );
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if (!taken.has(name)) return name;
  }
}

/** Admins see everyone; a human sees themself and their agents; an agent sees itself. */
export async function listPrincipals(
  db: Db,
  actor: Actor,
  kind?: PrincipalKind,
): Promise<Principal[]> {
  const scope =
    actor.kind === 'system' || (actor.kind === 'human' && actor.principal.is_admin)
      ? db`true`
      : db`(name = ${actor.name} or owner = ${actor.name})`;
  return db<Principal[]>`
    select * from principals
    where ${scope} and ${kind ? db`kind = ${kind}` : db`true`}
    order by id`;
}

/** Revokes an agent and every token it has, at once. Its owner or an admin may do it. */
export async function revokeAgent(db: Db, actor: Actor, name: string): Promise<Principal> {
  if (actor.kind === 'agent') throw forbidden('only a human may revoke agents');
  assertName(name);
  const ownOnly = actor.kind === 'human' && !actor.principal.is_admin;
  const [agent] = await db<Principal[]>`
    with p as (
      update principals set revoked_at = coalesce(revoked_at, now())
      where name = ${name} and kind = 'agent' and ${ownOnly ? db`owner = ${actor.name}` : db`true`}
      returning *
    ), t as (
      update tokens set revoked_at = now() from p where tokens.principal_id = p.id and tokens.revoked_at is null
    )
    select * from p`;
  if (!agent) throw notFound(`no agent named ${name}${ownOnly ? ' owned by you' : ''}`);
  return agent;
}

async function insertPrincipal<T>(run: () => Promise<T>, name: string): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof postgres.PostgresError && error.code === '23505') {
      throw conflict(
        error.constraint_name === 'principals_github_login_key'
          ? 'that GitHub login belongs to another human'
          : `the name ${name} is taken`,
      );
    }
    throw error;
  }
}
