import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import type { Logger } from '../logger.js';
import type { DataDirOwner } from './claim-data-dir.js';
import { isDatabaseUnavailable } from './is-database-unavailable.js';
import { startEmbeddedPostgres } from './start-embedded-postgres.js';

/** A connection pool or a transaction: every ledger statement runs on either. */
export type Db = postgres.Sql | postgres.TransactionSql;

export interface Database {
  sql: postgres.Sql;
  /**
   * Straight to PostgreSQL, never through a pooler: for LISTEN and session advisory locks
   * (withAdvisoryLock), which a transaction pooler would lose between transactions. With
   * DATABASE_DIRECT_URL, a small pool of its own; without, `sql` itself.
   */
  direct: postgres.Sql;
  /** The schema holding switchboard's tables; also names its NOTIFY channel. */
  schema: string;
  /** Whether PostgreSQL was started here (no DATABASE_URL). */
  embedded: boolean;
  /** With `attach`: the switchboard process whose embedded PostgreSQL this is connected to. */
  owner?: DataDirOwner;
  /** Records the server's URL in the data directory, for whoever finds it in use (embedded only). */
  recordServerUrl(url: string): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** A PostgreSQL ≥ 15 URL; without one, an embedded server is started in `dataDir`. */
  databaseUrl?: string | undefined;
  /**
   * DATABASE_DIRECT_URL: the same database as `databaseUrl`, not through a pooler. Setting it
   * says that `databaseUrl` is a transaction pooler (PgBouncer's `pool_mode = transaction`):
   * no prepared statements and no search_path at start-up go through it, and LISTEN and session
   * advisory locks use this one instead.
   */
  databaseDirectUrl?: string | undefined;
  dataDir: string;
  schema?: string;
  /** Pool size. */
  max?: number;
  log: Logger;
  /** Let embedded-postgres stop the cluster and exit on SIGINT/SIGTERM (default), or leave signals to the caller. */
  handleSignals?: boolean;
  /** When another switchboard process owns the data directory, use its PostgreSQL rather than refuse. */
  attach?: boolean;
  /** Aborted: give up starting the embedded PostgreSQL at its next step. */
  signal?: AbortSignal;
  /**
   * Seconds a DATABASE_URL that does not answer yet (refused, not found, starting up) is waited
   * for, asked again every second, before it is said not to be usable (0: not waited for).
   */
  waitSeconds?: number | undefined;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const MIN_SERVER_VERSION = 150000;
/**
 * The direct pool's size: the LISTEN connection is postgres.js's own besides it, so this holds a
 * retention pass's and a reconcile pass's advisory locks at once; idle ones close, so between
 * passes a replica holds one direct connection, its LISTEN.
 */
const DIRECT_MAX = 2;
const DIRECT_IDLE_SECONDS = 30;

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const schema = options.schema ?? 'switchboard';
  const embedded = options.databaseUrl
    ? undefined
    : await startEmbeddedPostgres(options.dataDir, options.log, {
        handleSignals: options.handleSignals,
        attach: options.attach,
        signal: options.signal,
      });
  const pooled = Boolean(options.databaseUrl && options.databaseDirectUrl);
  const sql = connect(options.databaseUrl ?? embedded!.url, {
    schema,
    max: options.max,
    log: options.log,
    pooled,
  });
  const direct = pooled
    ? connect(options.databaseDirectUrl!, {
        schema,
        max: DIRECT_MAX,
        log: options.log,
        idleTimeout: DIRECT_IDLE_SECONDS,
        applicationName: 'switchboard direct',
      })
    : sql;
  try {
    if (options.databaseUrl && options.waitSeconds)
      await waitUntilAnswering(sql, options.databaseUrl, options.waitSeconds, options.log);
    await usable(sql, options.databaseUrl, 'DATABASE_URL');
    if (pooled) {
      await usable(direct, options.databaseDirectUrl, 'DATABASE_DIRECT_URL');
      await assertSearchPath(sql, schema);
      await assertSameDatabase(sql, direct);
    }
  } catch (error) {
    await Promise.all([...new Set([sql, direct])].map((pool) => pool.end({ timeout: 1 })));
    await embedded?.stop();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    sql,
    direct,
    schema,
    embedded: embedded !== undefined,
    ...(embedded?.owner ? { owner: embedded.owner } : {}),
    recordServerUrl: async (url) => embedded?.recordUrl(url),
    close: () =>
      (closing ??= (async () => {
        await Promise.all([...new Set([sql, direct])].map((pool) => pool.end({ timeout: 5 })));
        await embedded?.stop();
      })()),
  };
}

/** Answers, and is new enough; else says which variable's server cannot be used and why. */
async function usable(sql: postgres.Sql, url: string | undefined, variable: string) {
  try {
    const [{ server_version_num }] = await sql<
      [{ server_version_num: string }]
    >`show server_version_num`;
    if (Number(server_version_num) < MIN_SERVER_VERSION) {
      throw new Error(`PostgreSQL 15 or newer is required (this server is ${server_version_num})`);
    }
  } catch (error) {
    throw url ? explainUnusable(url, variable, error) : error;
  }
}

/**
 * A PostgreSQL started beside the server (compose's, which podman-compose starts without waiting
 * for its healthcheck) refuses connections, or is not yet in DNS, for its first seconds: asked
 * again every second, said once in the log, until `seconds` have passed. Anything else (a wrong
 * password) is left to usable() to say at once.
 */
async function waitUntilAnswering(
  sql: postgres.Sql,
  databaseUrl: string,
  seconds: number,
  log: Logger,
): Promise<void> {
  const until = Date.now() + seconds * 1000;
  for (let told = false; ; told = true) {
    try {
      await sql`select 1`;
      return;
    } catch (error) {
      if (!isDatabaseUnavailable(error) || Date.now() >= until) return;
      if (!told) {
        const url = new URL(databaseUrl);
        log.info(
          { database: `${url.hostname}:${url.port || 5432}${url.pathname}`, seconds },
          `waiting up to ${seconds} s for the PostgreSQL at DATABASE_URL to answer (SWITCHBOARD_DATABASE_WAIT_SECONDS)`,
        );
      }
      await sleep(1000);
    }
  }
}

/** SQLSTATEs of a server that answers but will not let us in: wrong password, role or database. */
const REFUSED_LOGIN = new Set(['28P01', '28000', '3D000']);

/**
 * A DATABASE_URL that cannot be used, said in one line naming the server (never the password)
 * and what to check; code `database_unusable`. Other errors (too old a server) pass as they are.
 */
function explainUnusable(databaseUrl: string, variable: string, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  // PgBouncer's refusal of the search_path switchboard sends at start-up: a pooler it was not told of.
  const pooler = /unsupported startup parameter/.test((error as Error | null)?.message ?? '');
  if (!isDatabaseUnavailable(error) && !REFUSED_LOGIN.has(code as string) && !pooler) return error;
  const url = new URL(databaseUrl);
  const where = `${url.hostname}:${url.port || 5432}${url.pathname === '/' ? '' : url.pathname}`;
  const check = pooler
    ? `is it a pooler? Then set DATABASE_DIRECT_URL to the PostgreSQL behind it (README, "Behind PgBouncer")`
    : 'is it running and reachable from here, and are the user, password and database right?';
  return Object.assign(
    new Error(
      `cannot use the PostgreSQL at ${variable} (${where}): ${(error as Error).message} — ${check}`,
      { cause: error },
    ),
    { code: 'database_unusable' },
  );
}

/**
 * Through a transaction pooler, each transaction may run on another of its server connections,
 * each opened with the database's and the role's defaults: a search_path sent at start-up is
 * refused (PgBouncer before 1.20: "unsupported startup parameter") or not carried. So switchboard
 * sends none there, and its schema must come first in those defaults; said in one line how when
 * it does not. (Checked on the setting, not on current_schema(): the schema may not exist yet.)
 */
async function assertSearchPath(sql: postgres.Sql, schema: string): Promise<void> {
  const [{ path, role, database }] = await sql<[{ path: string; role: string; database: string }]>`
    select current_setting('search_path') as path, current_user as role,
           current_database() as database`;
  if (firstSchema(path, role) === schema) return;
  throw Object.assign(
    new Error(
      `through the pooler at DATABASE_URL the search_path is '${path}', not ${schema} first: a transaction pooler does not carry one set per connection, so make it the database's default (alter database ${database} set search_path = ${schema}, or alter role ${role} in database ${database} set search_path = ${schema}), then let the pooler reconnect (PgBouncer: RECONNECT on its console, or restart it)`,
    ),
    { code: 'database_unusable' },
  );
}

/** The first schema a search_path names, as PostgreSQL reads it (`"$user"` is the role). */
function firstSchema(path: string, role: string): string | undefined {
  const match = /^\s*(?:"((?:[^"]|"")*)"|([^,\s]+))/.exec(path);
  if (!match) return undefined;
  const name = match[1] !== undefined ? match[1].replace(/""/g, '"') : match[2]!.toLowerCase();
  return name === '$user' ? role : name;
}

/**
 * LISTEN on the direct connection hears what is sent through the pooler only when both reach one
 * database of one server; a DATABASE_DIRECT_URL naming another would leave every wake unheard,
 * and nothing would say so. The database's name and its server's start time tell them apart.
 */
async function assertSameDatabase(sql: postgres.Sql, direct: postgres.Sql): Promise<void> {
  const identify = (db: postgres.Sql) =>
    db<[{ database: string; started: string }]>`
      select current_database() as database, pg_postmaster_start_time()::text as started`;
  const [[pooled], [straight]] = await Promise.all([identify(sql), identify(direct)]);
  if (pooled.database === straight.database && pooled.started === straight.started) return;
  throw Object.assign(
    new Error(
      `DATABASE_DIRECT_URL does not reach the database behind DATABASE_URL (database ${straight.database} of a server started ${straight.started}, not ${pooled.database} of one started ${pooled.started}): point it at the PostgreSQL the pooler connects to, or wakes sent through one are never heard on the other`,
    ),
    { code: 'database_unusable' },
  );
}

export interface ConnectOptions {
  schema: string;
  max?: number | undefined;
  log: Logger;
  /**
   * Through a transaction pooler: no prepared statements (a statement prepared on one server
   * connection is not there on the next), no search_path at start-up (see assertSearchPath), and
   * no query sent behind another on one connection: postgres.js sends a query with parameters as
   * Parse/Describe/Flush and its Bind/Execute/Sync only after the answer, so behind another
   * query's Sync that first half went to a server connection PgBouncer (1.18) handed to another
   * client at that Sync's ReadyForQuery — the two clients' answers crossed, or one waited for
   * ever (pgbouncer/pgbouncer#759).
   */
  pooled?: boolean;
  /** Seconds an unused connection stays open (postgres.js's `idle_timeout`; default: for ever). */
  idleTimeout?: number;
  applicationName?: string;
}

/**
 * A postgres.js pool whose connections all use `schema` first on their search path, so the
 * ledger's SQL names tables without a schema and each test file can have its own. Through a
 * pooler, the database's default search path must name it (openDatabase checks).
 */
export function connect(
  url: string,
  {
    schema,
    max,
    log,
    pooled = false,
    idleTimeout,
    applicationName = 'switchboard',
  }: ConnectOptions,
): postgres.Sql {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name: ${schema}`);
  return postgres(url, {
    max: max ?? 10,
    connection: pooled
      ? { application_name: applicationName }
      : { search_path: schema, application_name: applicationName },
    ...(pooled && { prepare: false, max_pipeline: 0 }),
    ...(idleTimeout !== undefined && { idle_timeout: idleTimeout }),
    // Ids are bigint; as JSON they are numbers (exact up to 2^53, far past any todo count).
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (value: number) => String(value),
        parse: (value: string) => Number(value),
      },
    },
    onnotice: (notice) => log.debug({ notice: notice.message }, 'postgres notice'),
    backoff: reconnectDelaySeconds,
  });
}

/**
 * Seconds a connection waits before its next attempt after a failed one. postgres.js's default
 * grows to 10–20 s on a count every connection of the pool adds to, so a few seconds of
 * PostgreSQL restarting under load left requests waiting that long after it was back. Capped at
 * a second: a refused connection costs next to nothing, and the server recovers at once.
 */
export function reconnectDelaySeconds(retries: number): number {
  return (0.5 + Math.random() / 2) * Math.min(3 ** retries / 100, 1);
}
