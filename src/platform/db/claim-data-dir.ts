import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What the owner of a data directory writes into it: who runs its PostgreSQL, and where. */
export interface DataDirOwner {
  pid: number;
  /**
   * The process's boot and start time (Linux: `/proc`), so that a process which got the pid of a
   * killed owner (pids are reused, and a container's first pids are the same at every start) is
   * not taken for it. Null where it cannot be read: then a live pid counts as the owner.
   */
  started: string | null;
  /** Set once the server listens. */
  url?: string;
  /** The embedded PostgreSQL's port, for `admin token` to reach it while the owner runs. */
  postgres_port?: number;
  /** Tells this claim from an earlier one of the same process. */
  nonce: string;
  since: string;
}

export class DataDirInUseError extends Error {
  override readonly name = 'DataDirInUseError';
  readonly code = 'data_dir_in_use';

  constructor(
    readonly dataDir: string,
    readonly owner: DataDirOwner,
  ) {
    super(
      `data directory ${dataDir} is in use by switchboard pid ${owner.pid} ` +
        (owner.url ? `on ${owner.url}` : '(not listening on HTTP)'),
    );
  }
}

export interface DataDirClaim {
  owner: DataDirOwner;
  /** Records the URL the server listens on, for whoever finds the directory in use. */
  recordUrl(url: string): Promise<void>;
  /** Gives the directory up (after its PostgreSQL stopped). */
  release(): Promise<void>;
}

const OWNER_FILE = 'owner.json';
/** Claims of this process still held: a record with our pid but none of these is a stale one. */
const held = new Set<string>();

/**
 * Makes this process the one owner of `dataDir`, or throws DataDirInUseError naming the owner.
 *
 * The claim is a record of the owner's pid, judged by whether that process still lives, so a
 * start after a SIGKILL takes over at once. Checking the record and writing ours happen under
 * proper-lockfile's lock, so of two processes starting at once exactly one wins. That lock is
 * held for milliseconds only: held for the server's life, its mtime heartbeat would make a
 * restart after SIGKILL wait out the stale period, and a stalled event loop would lose it.
 */
export async function claimDataDir(
  dataDir: string,
  { postgresPort }: { postgresPort?: number } = {},
): Promise<DataDirClaim> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, OWNER_FILE);
  const { lock } = await import('proper-lockfile');
  const unlock = await lock(dataDir, {
    lockfilePath: join(dataDir, 'owner.lock'),
    realpath: false,
    // A process killed inside these few milliseconds leaves the lock behind for this long.
    stale: 5000,
    retries: { retries: 60, minTimeout: 20, maxTimeout: 200 },
    // The lock outlives its stale period only if this process stalls for seconds while
    // claiming; the default would throw from a timer and end the process.
    onCompromised: () => {},
  });
  let owner: DataDirOwner;
  try {
    const current = await readOwnerRecord(file);
    if (current && (await isLiveOwner(current))) throw new DataDirInUseError(dataDir, current);
    owner = {
      pid: process.pid,
      started: (await startIdentity(process.pid)) ?? null,
      ...(postgresPort === undefined ? {} : { postgres_port: postgresPort }),
      nonce: randomBytes(9).toString('base64url'),
      since: new Date().toISOString(),
    };
    await writeOwnerRecord(file, owner);
    held.add(owner.nonce);
  } finally {
    await unlock();
  }
  return {
    owner,
    async recordUrl(url) {
      owner.url = url;
      if (held.has(owner.nonce)) await writeOwnerRecord(file, owner);
    },
    async release() {
      if (!held.delete(owner.nonce)) return;
      // Only a live owner's record is ever replaced, and we are alive: it is still ours.
      const current = await readOwnerRecord(file);
      if (current?.nonce === owner.nonce) await unlink(file).catch(() => {});
    },
  };
}

/** The process that owns `dataDir` now, if one does. */
export async function readDataDirOwner(dataDir: string): Promise<DataDirOwner | undefined> {
  const owner = await readOwnerRecord(join(dataDir, OWNER_FILE));
  return owner && (await isLiveOwner(owner)) ? owner : undefined;
}

/** Written whole under a temporary name and renamed, so a reader never sees half a record. */
async function writeOwnerRecord(file: string, owner: DataDirOwner): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify(owner, null, 2) + '\n', { mode: 0o600 });
  await rename(temporary, file);
}

async function readOwnerRecord(file: string): Promise<DataDirOwner | undefined> {
  let json: Partial<DataDirOwner>;
  try {
    json = JSON.parse(await readFile(file, 'utf8')) as Partial<DataDirOwner>;
  } catch {
    // None, or not ours to make sense of: nobody can be shown to own the directory.
    return undefined;
  }
  if (!Number.isInteger(json?.pid) || typeof json.nonce !== 'string') return undefined;
  return json as DataDirOwner;
}

async function isLiveOwner(owner: DataDirOwner): Promise<boolean> {
  if (owner.pid === process.pid) return held.has(owner.nonce);
  if (!isAlive(owner.pid)) return false;
  if (!owner.started) return true;
  const started = await startIdentity(owner.pid);
  return started === undefined || started === owner.started;
}

/** Whether a process with this pid exists (it may be another user's). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** `boot id/start time` of a process on Linux; undefined elsewhere or when it cannot be read. */
async function startIdentity(pid: number): Promise<string | undefined> {
  try {
    const [stat, boot] = await Promise.all([
      readFile(`/proc/${pid}/stat`, 'utf8'),
      readFile('/proc/sys/kernel/random/boot_id', 'utf8'),
    ]);
    // Field 2, the command name, is in parentheses and may hold spaces; field 22 is the start
    // time in clock ticks since boot.
    const startTime = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .at(22 - 3);
    return startTime ? `${boot.trim()}/${startTime}` : undefined;
  } catch {
    return undefined;
  }
}
