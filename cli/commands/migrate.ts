import { SwitchboardCommand } from '../switchboard-command.js';
import { CommandError, EXIT } from '../command-error.js';

export default class Migrate extends SwitchboardCommand {
  static override summary = 'Apply the pending database migrations, and say which';
  static override description =
    'Opens the database as `switchboard up` would (DATABASE_URL, else the embedded PostgreSQL in the data directory) and applies the migrations it has not seen. `up` does the same on every start; this is for deploying the schema ahead of the servers.';
  static override examples = [
    '<%= config.bin %> migrate',
    'DATABASE_URL=postgres://… <%= config.bin %> migrate --json',
  ];
  // Talks to no server: no --url.
  static override baseFlags = {};
  static override enableJsonFlag = true;

  async run() {
    await this.parse(Migrate);
    const [{ loadServerConfig }, { createPinoLogger }, { openDatabase }, { migrate }] =
      await Promise.all([
        import('../../src/platform/config/server-config.js'),
        import('../../src/platform/logger.js'),
        import('../../src/platform/db/open-database.js'),
        import('../../src/platform/db/migrate.js'),
      ]);
    let config: ReturnType<typeof loadServerConfig>;
    try {
      config = loadServerConfig(process.env);
    } catch (error) {
      throw new CommandError((error as Error).message, EXIT.usage);
    }
    const log = await createPinoLogger(config.logLevel);
    const db = await openDatabase({
      databaseUrl: config.databaseUrl,
      databaseDirectUrl: config.databaseDirectUrl,
      dataDir: config.dataDir,
      max: 1,
      log,
      handleSignals: true,
    }).catch((error: unknown) => {
      // Another switchboard process runs on the data directory (say which, and touch nothing),
      // the data directory cannot be used, or DATABASE_URL cannot be (say which server, and
      // what to check).
      const { code } = error as { code?: unknown };
      if (
        code !== 'data_dir_in_use' &&
        code !== 'data_dir_unusable' &&
        code !== 'database_unusable'
      )
        throw error;
      throw new CommandError((error as Error).message, EXIT.unexpected);
    });
    try {
      const { applied } = await migrate(db.sql, db.schema);
      this.log(
        applied.length
          ? `applied ${applied.length} migration${applied.length === 1 ? '' : 's'} to schema ${db.schema}:\n${applied.map((name) => `  ${name}`).join('\n')}`
          : `schema ${db.schema} is up to date`,
      );
      return { schema: db.schema, applied };
    } finally {
      await db.close();
    }
  }
}
