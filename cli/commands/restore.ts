import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../command-error.js';
import { openServerDatabase } from '../open-server-database.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Restore extends SwitchboardCommand {
  static override summary = "Load a backup into an empty database: switchboard's data, as it was";
  static override description = `Loads FILE, written by 'switchboard backup', into the database up would use with the same settings: DATABASE_URL (any PostgreSQL 15 or newer, as a role that may create the schema), else the data directory's embedded PostgreSQL (a new data directory is set up). All in one transaction: the schema is brought to the backup's migration version, every row is loaded and the sequences set, or nothing changes. Then start 'switchboard up' on it; it applies this switchboard's later migrations.

Refused (exit 3, nothing changed): a backup of a newer schema than this switchboard's, and a database that already holds switchboard's data. A file that is no backup, or a damaged one: exit 2, nothing changed.

The sealed secrets open with the key of the server backed up: set SWITCHBOARD_SECRET_KEY to it (the contents of its data directory's secret.key), or copy that file into the new data directory.`;
  static override examples = [
    'DATABASE_URL=postgres://switchboard:…@db.example.com/switchboard <%= config.bin %> restore backup.gz',
    '<%= config.bin %> restore backup.gz --data-dir ./new-data --json',
  ];
  // Talks to no server: no --url.
  static override baseFlags = {};
  static override enableJsonFlag = true;
  static override args = {
    file: Args.string({
      required: true,
      description: "the backup, as 'switchboard backup' wrote it",
    }),
  };
  static override flags = {
    'data-dir': Flags.string({
      description:
        'the data directory to restore into without DATABASE_URL (default: SWITCHBOARD_DATA_DIR, else $XDG_DATA_HOME/switchboard)',
    }),
  };

  async run() {
    const { args, flags } = await this.parse(Restore);
    const [{ openBackupFile, BackupError }, { assertRestorable, restoreBackup }, secrets] =
      await Promise.all([
        import('../../src/platform/db/backup-file.js'),
        import('../../src/platform/db/restore-backup.js'),
        import('../../src/platform/secrets/load-secret-key.js'),
      ]);
    const refused = (error: unknown) =>
      error instanceof BackupError
        ? new CommandError(
            error.message,
            error.code === 'backup_unreadable' ? EXIT.usage : EXIT.refused,
          )
        : error;
    // The file is read and checked before the database is opened: one that is refused changes
    // nothing, not even a new data directory.
    const backup = await openBackupFile(args.file).catch((error: unknown) => {
      throw refused(error);
    });
    let summary: Awaited<ReturnType<typeof restoreBackup>>;
    let key: Awaited<ReturnType<typeof secrets.findSecretKey>>;
    let schema: string;
    let dataDir: string | undefined;
    try {
      await assertRestorable(backup.header).catch((error: unknown) => {
        throw refused(error);
      });
      const { config, db } = await openServerDatabase(flags['data-dir'], { existing: false });
      schema = db.schema;
      dataDir = db.embedded ? config.dataDir : undefined;
      try {
        key = await secrets.findSecretKey({
          secretKey: config.secretKey,
          embedded: db.embedded,
          dataDir: config.dataDir,
        });
        summary = await restoreBackup(db.sql, db.schema, backup).catch((error: unknown) => {
          throw refused(error);
        });
      } finally {
        await db.close();
      }
    } finally {
      backup.close();
    }
    const migration = backup.header.migrations.at(-1)!.name;
    const counts = Object.values(summary.rows);
    const rows = counts.reduce((sum, count) => sum + count, 0);
    this.log(
      `restored ${args.file} into schema ${schema} (migration ${migration}): ${rows} row${rows === 1 ? '' : 's'} in ${counts.length} tables — start 'switchboard up' on it`,
    );
    // Whether the key here opens the backup's sealed secrets: null, it holds none.
    const wanted = backup.header.secret_key_id;
    const secretKey =
      wanted === null
        ? null
        : !key
          ? 'missing'
          : secrets.secretKeyId(key.key) === wanted
            ? 'same'
            : 'other';
    // On stderr, so that --json does not hide it.
    if (secretKey === 'missing' || secretKey === 'other') {
      process.stderr.write(`${keyNote(key?.where, dataDir)}\n`);
    }
    return {
      file: args.file,
      schema,
      migration,
      applied: summary.applied,
      rows: summary.rows,
      secret_key: secretKey,
    };
  }
}

/** The backup's sealed secrets need the server key they were sealed with, which is not here. */
function keyNote(where: string | undefined, dataDir: string | undefined): string {
  const fix = `set SWITCHBOARD_SECRET_KEY to the key of the switchboard backed up (the contents of its data directory's secret.key)${dataDir ? `, or copy that file into ${dataDir}` : ''}, before 'switchboard up'`;
  return where
    ? `the backup's secrets (sources', the GitHub App's, Slack's) were sealed with another server key than ${where === 'SWITCHBOARD_SECRET_KEY' ? where : `the one in ${where}`}: ${fix}`
    : `the backup's secrets (sources', the GitHub App's, Slack's) open only with the server key they were sealed with: ${fix}`;
}
