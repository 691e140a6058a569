import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ServerConfig } from '../src/platform/config/server-config.js';
import type { Database } from '../src/platform/db/open-database.js';
import { CommandError, EXIT } from './command-error.js';

/**
 * The database `up` would use with the same settings (DATABASE_URL, else the data directory's
 * embedded PostgreSQL: the running server's, when one runs on it, else started for the command),
 * for the commands that work on the database itself rather than through a server. Its modules
 * load only when called, so every other command starts without them.
 */
export async function openServerDatabase(
  dataDir: string | undefined,
  /** Refuse a data directory with no database yet, rather than start a new, empty one there. */
  { existing }: { existing: boolean },
): Promise<{ config: ServerConfig; db: Database }> {
  const [{ loadServerConfig }, { createPinoLogger }, { openDatabase }] = await Promise.all([
    import('../src/platform/config/server-config.js'),
    import('../src/platform/logger.js'),
    import('../src/platform/db/open-database.js'),
  ]);
  let config: ServerConfig;
  try {
    config = loadServerConfig(process.env, { dataDir });
    config.dataDir = resolve(config.dataDir);
  } catch (error) {
    throw new CommandError((error as Error).message, EXIT.usage);
  }
  if (existing && !config.databaseUrl && !existsSync(join(config.dataDir, 'pg-password'))) {
    throw new CommandError(
      `${config.dataDir} holds no switchboard data — start 'switchboard up' on it once first`,
      EXIT.usage,
    );
  }
  // Quiet unless asked: these commands' output is what they did.
  const log = await createPinoLogger(process.env.LOG_LEVEL ? config.logLevel : 'warn');
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    databaseDirectUrl: config.databaseDirectUrl,
    dataDir: config.dataDir,
    max: 1,
    log,
    handleSignals: true,
    attach: true,
  }).catch((error: unknown) => {
    const { code } = error as { code?: unknown };
    if (code !== 'data_dir_unusable' && code !== 'database_unusable') throw error;
    throw new CommandError((error as Error).message, EXIT.unexpected);
  });
  return { config, db };
}
