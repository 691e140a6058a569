import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';

const run = promisify(execFile);

export interface DebianPostgres {
  /** As its superuser, `postgres`. */
  url: string;
  stop(): Promise<void>;
}

/**
 * A server of Debian's `postgresql-VERSION` package (.ci/run installs 15: the oldest PostgreSQL
 * switchboard supports, where the embedded one is the newest), in a cluster of its own in a
 * temporary folder, on a free port of 127.0.0.1. As root, it runs as the `postgres` user.
 */
export async function startDebianPostgres(version: number): Promise<DebianPostgres> {
  const bin = `/usr/lib/postgresql/${version}/bin`;
  if (!existsSync(join(bin, 'pg_ctl'))) {
    throw new Error(
      `PostgreSQL ${version} is not installed (no ${bin}/pg_ctl): apt-get install postgresql-${version}`,
    );
  }
  const dir = await mkdtemp(join(tmpdir(), `switchboard-pg${version}-`));
  const asRoot = userInfo().uid === 0;
  const as = async (command: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, command), ...args])
      : run(join(bin, command), args);
  const password = randomBytes(12).toString('hex');
  const port = await freePort();
  const data = join(dir, 'data');
  try {
    await writeFile(join(dir, 'password'), `${password}\n`, { mode: 0o600 });
    if (asRoot) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const uid = Number(stdout.trim());
      await chown(dir, uid, -1);
      await chown(join(dir, 'password'), uid, -1);
    }
    await chmod(dir, 0o700);
    await as('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      `--pwfile=${join(dir, 'password')}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
    ]);
    await as('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'log'),
      '-o',
      `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`,
      '-w',
      'start',
    ]);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await as('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
