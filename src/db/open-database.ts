import postgres from 'postgres';
import type { Logger } from '../logger.js';
import type { DataDirOwner } from './claim-data-dir.js';
import { isDatabaseUnavailable } from './is-database-unavailable.js';
import { startEmbeddedPostgres } from './start-embedded-postgres.js';

/** A connection pool or a transaction: every ledger statement runs on either. */
export type Db = postgres.Sql | postgres.TransactionSql;

export interface Database {
  sql: postgres.Sql;
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
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const MIN_SERVER_VERSION = 150000;

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const schema = options.schema ?? 'switchboard';
  const embedded = options.databaseUrl
    ? undefined
    : await startEmbeddedPostgres(options.dataDir, options.log, {
        handleSignals: options.handleSignals,
        attach: options.attach,
        signal: options.signal,
      });
  const sql = connect(options.databaseUrl ?? embedded!.url, {
    schema,
    max: options.max,
    log: options.log,
  });
  try {
    const [{ server_version_num }] = await sql<
      [{ server_version_num: string }]
    >`show server_version_num`;
    if (Number(server_version_num) < MIN_SERVER_VERSION) {
      throw new Error(`PostgreSQL 15 or newer is required (this server is ${server_version_num})`);
    }
  } catch (error) {
    await sql.end({ timeout: 1 });
    await embedded?.stop();
    throw options.databaseUrl ? explainUnusable(options.databaseUrl, error) : error;
  }
  let closing: Promise<void> | undefined;
  return {
    sql,
    schema,
    embedded: embedded !== undefined,
    ...(embedded?.owner ? { owner: embedded.owner } : {}),
    recordServerUrl: async (url) => embedded?.recordUrl(url),
    close: () =>
      (closing ??= (async () => {
        await sql.end({ timeout: 5 });
        await embedded?.stop();
      })()),
  };
}

/** SQLSTATEs of a server that answers but will not let us in: wrong password, role or database. */
const REFUSED_LOGIN = new Set(['28P01', '28000', '3D000']);

/**
 * A DATABASE_URL that cannot be used, said in one line naming the server (never the password)
 * and what to check; code `database_unusable`. Other errors (too old a server) pass as they are.
 */
function explainUnusable(databaseUrl: string, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (!isDatabaseUnavailable(error) && !REFUSED_LOGIN.has(code as string)) return error;
  const url = new URL(databaseUrl);
  const where = `${url.hostname}:${url.port || 5432}${url.pathname === '/' ? '' : url.pathname}`;
  return Object.assign(
    new Error(
      `cannot use the PostgreSQL at DATABASE_URL (${where}): ${(error as Error).message} — is it running and reachable from here, and are the user, password and database right?`,
      { cause: error },
    ),
    { code: 'database_unusable' },
  );
}

export interface ConnectOptions {
  schema: string;
  max?: number | undefined;
  log: Logger;
}

/**
 * A postgres.js pool whose connections all use `schema` first on their search path, so the
 * ledger's SQL names tables without a schema and each test file can have its own.
 */
export function connect(url: string, { schema, max, log }: ConnectOptions): postgres.Sql {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name: ${schema}`);
  return postgres(url, {
    max: max ?? 10,
    connection: { search_path: schema, application_name: 'switchboard' },
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
