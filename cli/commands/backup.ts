import { stat } from 'node:fs/promises';
import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../command-error.js';
import { openServerDatabase } from '../open-server-database.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Backup extends SwitchboardCommand {
  static override summary = "Write all of switchboard's data to FILE, in one snapshot";
  static override description = `Reads the database up would use with the same settings — DATABASE_URL, else the data directory's embedded PostgreSQL, the running server's when one runs on it — in one snapshot, and writes every table of switchboard's schema and the schema's migration version to FILE (gzip, mode 0600). The server goes on serving meanwhile. FILE must not exist yet.

The sealed secrets (sources', the GitHub App's, Slack's) stay sealed: they open only with the server key, which the backup does not hold. It says where that key is (the data directory's secret.key, or SWITCHBOARD_SECRET_KEY): keep it with the backup. 'switchboard restore FILE' loads it into an empty database.`;
  static override examples = [
    '<%= config.bin %> backup switchboard-$(date +%F).gz',
    '<%= config.bin %> backup ./backup.gz --data-dir ./data --json',
    'DATABASE_URL=postgres://… <%= config.bin %> backup /var/backups/switchboard.gz',
  ];
  // Talks to no server: no --url.
  static override baseFlags = {};
  static override enableJsonFlag = true;
  static override args = {
    file: Args.string({ required: true, description: 'the backup to write; must not exist' }),
  };
  static override flags = {
    'data-dir': Flags.string({
      description:
        "the server's data directory (default: SWITCHBOARD_DATA_DIR, else $XDG_DATA_HOME/switchboard)",
    }),
  };

  async run() {
    const { args, flags } = await this.parse(Backup);
    const [{ assertNewBackupFile, writeBackup }, { BackupError }, { findSecretKey, secretKeyId }] =
      await Promise.all([
        import('../../src/platform/db/write-backup.js'),
        import('../../src/platform/db/backup-file.js'),
        import('../../src/platform/secrets/load-secret-key.js'),
      ]);
    try {
      assertNewBackupFile(args.file);
    } catch (error) {
      throw new CommandError((error as Error).message, EXIT.usage);
    }
    const { config, db } = await openServerDatabase(flags['data-dir'], { existing: true });
    let summary: Awaited<ReturnType<typeof writeBackup>>;
    let key: Awaited<ReturnType<typeof findSecretKey>>;
    try {
      key = await findSecretKey({
        secretKey: config.secretKey,
        embedded: db.embedded,
        dataDir: config.dataDir,
      });
      summary = await writeBackup(db.sql, db.schema, args.file, {
        secretKeyId: key ? secretKeyId(key.key) : null,
      });
    } catch (error) {
      if (error instanceof BackupError) throw new CommandError(error.message, EXIT.usage);
      throw error;
    } finally {
      await db.close();
    }
    const bytes = (await stat(args.file)).size;
    const migration = summary.header.migrations.at(-1)!.name;
    const counts = Object.values(summary.rows);
    const rows = counts.reduce((sum, count) => sum + count, 0);
    this.log(
      `backed up schema ${db.schema} (migration ${migration}) to ${args.file}: ${rows} row${rows === 1 ? '' : 's'} in ${counts.length} tables, ${bytes.toLocaleString('en')} bytes`,
    );
    // On stderr, so that --json does not hide it.
    if (key) process.stderr.write(`${keyNote(key.where)}\n`);
    return {
      file: args.file,
      bytes,
      schema: db.schema,
      migration,
      rows: summary.rows,
      secret_key: key?.where ?? null,
    };
  }
}

/** Where the key the backup's sealed secrets need is: it is not in the backup. */
function keyNote(where: string): string {
  const lead =
    "the secrets in the backup (sources', the GitHub App's, Slack's) open only with the server key, which it does not hold";
  return where === 'SWITCHBOARD_SECRET_KEY'
    ? `${lead}: SWITCHBOARD_SECRET_KEY — keep it with the backup`
    : `${lead}: the file ${where} — keep it with the backup; with DATABASE_URL, set SWITCHBOARD_SECRET_KEY to its contents`;
}
