import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as Flags from '@oclif/core/flags';
import { serverKey, updateCredentialsFile } from '../../../src/platform/config/credentials-file.js';
import { CommandError, EXIT } from '../../command-error.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class AdminToken extends SwitchboardCommand {
  static override summary = "Mint a new admin token from a server's data directory";
  static override description = `Whoever can read a data directory can act as its admin, so this needs no token: it opens the directory's database — the running server's embedded PostgreSQL when a server runs on it, else it starts it for a moment — and issues a new token for the first admin. With DATABASE_URL set, it uses that database instead.

The token is printed once. With --save it becomes the credentials file's entry for the server (replacing an earlier token for that URL, and saying so) and the current server. The server's URL is the one the running server recorded; without a running server, --url, else the URL up would serve with the same settings (HOST, PORT).`;
  static override examples = [
    '<%= config.bin %> admin token --data-dir ./other --save',
    '<%= config.bin %> admin token --json',
    'DATABASE_URL=postgres://… <%= config.bin %> admin token --url https://switchboard.example.com --save',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    'data-dir': Flags.string({
      description:
        "the server's data directory (default: SWITCHBOARD_DATA_DIR, else $XDG_DATA_HOME/switchboard)",
    }),
    save: Flags.boolean({
      description: 'save the token in the credentials file and make the server current',
    }),
    url: Flags.string({
      description: 'the server the token is for, when no server runs on the data directory',
    }),
  };

  async run() {
    const { flags } = await this.parse(AdminToken);
    const [{ loadServerConfig }, { createPinoLogger }, { openDatabase }, { mintAdminToken }] =
      await Promise.all([
        import('../../../src/platform/config/server-config.js'),
        import('../../../src/platform/logger.js'),
        import('../../../src/platform/db/open-database.js'),
        import('../../../src/server/mint-admin-token.js'),
      ]);
    let config: ReturnType<typeof loadServerConfig>;
    try {
      config = loadServerConfig(process.env, { dataDir: flags['data-dir'] });
    } catch (error) {
      throw new CommandError((error as Error).message, EXIT.usage);
    }
    const dataDir = resolve(config.dataDir);
    if (flags.url !== undefined && !serverKey(flags.url)) {
      throw new CommandError(
        `--url must be an http(s) URL, not ${JSON.stringify(flags.url)}`,
        EXIT.usage,
      );
    }
    if (!config.databaseUrl && !existsSync(join(dataDir, 'pg-password'))) {
      throw new CommandError(
        `${dataDir} holds no switchboard data — start 'switchboard up' on it once first`,
        EXIT.usage,
      );
    }
    // Quiet unless asked: this command's output is the token.
    const log = await createPinoLogger(process.env.LOG_LEVEL ? config.logLevel : 'warn');
    const db = await openDatabase({
      databaseUrl: config.databaseUrl,
      databaseDirectUrl: config.databaseDirectUrl,
      dataDir,
      max: 1,
      log,
      handleSignals: true,
      attach: true,
    }).catch((error: unknown) => {
      const { code } = error as { code?: unknown };
      if (code !== 'data_dir_in_use' && code !== 'database_unusable') throw error;
      throw new CommandError((error as Error).message, EXIT.unexpected);
    });
    let minted: Awaited<ReturnType<typeof mintAdminToken>>;
    try {
      const [{ ready }] = await db.sql<[{ ready: boolean }]>`
        select to_regclass('principals') is not null as ready`;
      if (!ready) {
        throw new CommandError(
          `the database holds no switchboard schema yet — start 'switchboard up' on it once first`,
          EXIT.usage,
        );
      }
      minted = await mintAdminToken(db.sql, 'admin_token');
    } finally {
      await db.close();
    }
    if (!minted) throw new CommandError('the database has no admin human', EXIT.refused);

    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = serverKey(
      flags.url ??
        db.owner?.url ??
        `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`,
    )!;
    const { admin, token } = minted;
    this.log(`new admin token for ${admin.name} on ${url} (shown once):\n${token}`);
    let replaced = false;
    if (flags.save) {
      ({ replaced } = await updateCredentialsFile(config.credentialsFile, (credentials) => {
        const earlier = credentials.servers[url];
        credentials.servers[url] = { token };
        credentials.current = url;
        return { write: true, replaced: earlier !== undefined };
      }));
      this.log(
        `saved for ${url} in ${config.credentialsFile}${replaced ? ', replacing the token saved for it' : ''}; the CLI now uses ${url}`,
      );
    }
    return {
      url,
      admin: admin.name,
      token,
      running: db.owner !== undefined,
      saved: flags.save === true,
      replaced,
      credentials_file: config.credentialsFile,
    };
  }
}
