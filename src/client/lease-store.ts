import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

type Env = Record<string, string | undefined>;

export interface Lease {
  todo_id: number;
  lease_token: string;
  lease_expires_at: string | null;
}

/** Leases that ended this long ago are of no use (the ledger refuses them) and are tidied away. */
const KEEP_ENDED_MS = 24 * 3600 * 1000;

/** `$XDG_STATE_HOME/switchboard/leases`, else `~/.local/state/switchboard/leases`. */
export function defaultLeaseDir(env: Env = process.env): string {
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'switchboard', 'leases');
}

/**
 * The lease tokens of todos claimed from this machine, so that `todo complete 42` needs only the
 * id. One file per lease (mode 0600) rather than one shared file: agents run several CLI
 * processes at once, and separate files need no locking for that.
 */
export function createLeaseStore(serverUrl: string, dir = defaultLeaseDir()) {
  const server = createHash('sha256').update(serverUrl.replace(/\/+$/, '')).digest('hex');
  const prefix = `${server.slice(0, 16)}-`;
  const fileOf = (id: number) => join(dir, `${prefix}${id}.json`);

  return {
    async save(lease: Lease): Promise<void> {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const file = fileOf(lease.todo_id);
      const temporary = `${file}.${process.pid}.tmp`;
      await writeFile(temporary, JSON.stringify(lease) + '\n', { mode: 0o600 });
      await rename(temporary, file);
      await tidy(dir);
    },

    async get(id: number): Promise<string | undefined> {
      try {
        return (JSON.parse(await readFile(fileOf(id), 'utf8')) as Lease).lease_token;
      } catch {
        return undefined;
      }
    },

    async remove(id: number): Promise<void> {
      await rm(fileOf(id), { force: true });
    },
  };
}

async function tidy(dir: string): Promise<void> {
  const cutoff = Date.now() - KEEP_ENDED_MS;
  for (const name of await readdir(dir)) {
    if (!name.endsWith('.json')) continue;
    try {
      const { lease_expires_at } = JSON.parse(await readFile(join(dir, name), 'utf8')) as Lease;
      if (lease_expires_at && Date.parse(lease_expires_at) < cutoff) {
        await rm(join(dir, name), { force: true });
      }
    } catch {
      // Another process removed it meanwhile, or it is being replaced: not ours to judge.
    }
  }
}
