import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { z } from 'zod';

/**
 * A switchboard backup (docs/backup-format.md): gzip around lines of JSON and PostgreSQL's COPY
 * text. A header line; per table a line naming it and its columns, then its rows as `COPY … TO
 * STDOUT` wrote them, then `\.`; a last line with every table's row count.
 */
export const BACKUP_FORMAT = 'switchboard-backup';
export const BACKUP_FORMAT_VERSION = 1;

/** Identifiers as switchboard's schema names them: safe to write into a statement quoted. */
const IDENTIFIER = z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/);

const migrationLine = z.object({
  version: z.number().int().positive(),
  name: z.string(),
  checksum: z.string(),
});

export const backupHeader = z.object({
  format: z.literal(BACKUP_FORMAT),
  format_version: z.number().int().positive(),
  switchboard_version: z.string(),
  created_at: z.string(),
  postgres_version: z.string(),
  schema: IDENTIFIER,
  /** The migrations applied to the schema backed up, in order: its schema's version. */
  migrations: z.array(migrationLine).min(1),
  /** secretKeyId of the server key its sealed secrets open with; null: none was found. */
  secret_key_id: z.string().nullable(),
});
export type BackupHeader = z.infer<typeof backupHeader>;

export const tableLine = z.object({
  table: IDENTIFIER,
  columns: z.array(IDENTIFIER).min(1),
  /** The table's identity columns' sequences as they were: null, never used. */
  sequences: z.array(z.object({ column: IDENTIFIER, last_value: z.number().int().nullable() })),
});
export type TableLine = z.infer<typeof tableLine>;

export const endLine = z.object({ end: z.literal(true), rows: z.record(z.string(), z.number()) });

/** What is wrong with a backup file, or why it is refused, in one line; `code` says which. */
export class BackupError extends Error {
  override readonly name = 'BackupError';

  constructor(
    message: string,
    /**
     * `backup_unreadable`: not a backup, or damaged (or no file); `backup_newer`: of a schema or
     * format this switchboard does not know; `target_not_empty`: the database to restore into
     * already holds switchboard's data, or a schema the backup's is not.
     */
    readonly code: 'backup_unreadable' | 'backup_newer' | 'target_not_empty',
  ) {
    super(message);
  }
}

export interface BackupReader {
  /** The next line, without its newline; undefined where the file ends. */
  line(): Promise<string | undefined>;
  /** One table's rows, up to the `\.` line that ends them (not given), in chunks; counts them. */
  rows(count: { rows: number }): AsyncGenerator<Buffer>;
  /** Whether all of the file has been read (and gzip's checksum checked). */
  atEnd(): Promise<boolean>;
}

const NEWLINE = 0x0a;
/** A header or table line is short; a longer one is no backup's. */
const MAX_LINE = 1 << 20;
/** The end of a table's rows: a line `\.`, after a row's newline (or as the section's first). */
const END_OF_ROWS = Buffer.from('\n\\.\n');

export function createBackupReader(
  source: AsyncIterable<Buffer>,
  /** The error to throw, and why: what is wrong, and the error reading the source, if that failed. */
  damaged: (why: string, cause?: unknown) => BackupError,
): BackupReader {
  const chunks = source[Symbol.asyncIterator]();
  let buffer: Buffer = Buffer.alloc(0);
  let ended = false;
  const more = async (): Promise<boolean> => {
    if (ended) return false;
    let next: IteratorResult<Buffer>;
    try {
      next = await chunks.next();
    } catch (error) {
      throw damaged((error as Error).message, error);
    }
    if (next.done) {
      ended = true;
      return false;
    }
    buffer = buffer.length ? Buffer.concat([buffer, next.value]) : next.value;
    return true;
  };
  return {
    async line() {
      for (;;) {
        const at = buffer.indexOf(NEWLINE);
        if (at >= 0) {
          const line = buffer.toString('utf8', 0, at);
          buffer = buffer.subarray(at + 1);
          return line;
        }
        if (buffer.length > MAX_LINE) throw damaged('a line is too long');
        if (!(await more())) {
          if (buffer.length) throw damaged('it ends inside a line');
          return undefined;
        }
      }
    },
    async *rows(count) {
      // In COPY's text format a row's newline is its only unescaped one, and a lone `\.` no row.
      let atLineStart = true;
      for (;;) {
        if (atLineStart && buffer.subarray(0, 3).equals(END_OF_ROWS.subarray(1))) {
          buffer = buffer.subarray(3);
          return;
        }
        const end = buffer.indexOf(END_OF_ROWS);
        if (end >= 0) {
          const last = buffer.subarray(0, end + 1);
          count.rows += newlines(last);
          buffer = buffer.subarray(end + END_OF_ROWS.length);
          yield last;
          return;
        }
        // The last three bytes may begin the end of the rows: keep them for the next chunk.
        const whole = buffer.subarray(0, Math.max(0, buffer.length - 3));
        if (whole.length) {
          count.rows += newlines(whole);
          atLineStart = whole[whole.length - 1] === NEWLINE;
          buffer = buffer.subarray(whole.length);
          yield whole;
        }
        if (!(await more())) throw damaged('it ends inside a table');
      }
    },
    async atEnd() {
      return buffer.length === 0 && !(await more());
    },
  };
}

function newlines(chunk: Buffer): number {
  let count = 0;
  for (let at = chunk.indexOf(NEWLINE); at >= 0; at = chunk.indexOf(NEWLINE, at + 1)) count++;
  return count;
}

export interface OpenedBackup {
  file: string;
  header: BackupHeader;
  reader: BackupReader;
  close(): void;
}

/**
 * Opens a backup and reads its header, refusing (BackupError) a file that is none, or of a
 * format newer than this switchboard reads. The rest is read by whoever restores it.
 */
export async function openBackupFile(file: string): Promise<OpenedBackup> {
  const input = createReadStream(file);
  const gunzip = createGunzip();
  input.on('error', (error) => gunzip.destroy(error));
  input.pipe(gunzip);
  const close = () => {
    input.destroy();
    gunzip.destroy();
  };
  const damaged = (why: string, cause?: unknown) =>
    new BackupError(
      (cause as NodeJS.ErrnoException | undefined)?.syscall
        ? `cannot read ${file}: ${why}`
        : `${file} is damaged or not a switchboard backup: ${why}`,
      'backup_unreadable',
    );
  const reader = createBackupReader(gunzip, damaged);
  try {
    const header = parseHeader(await reader.line(), damaged);
    return { file, header, reader, close };
  } catch (error) {
    close();
    throw error;
  }
}

function parseHeader(
  line: string | undefined,
  damaged: (why: string) => BackupError,
): BackupHeader {
  let json: unknown;
  try {
    json = JSON.parse(line ?? '');
  } catch {
    throw damaged('its first line is not a switchboard backup header');
  }
  const format = z
    .object({ format: z.literal(BACKUP_FORMAT), format_version: z.number() })
    .safeParse(json);
  if (!format.success) throw damaged('its first line is not a switchboard backup header');
  if (format.data.format_version > BACKUP_FORMAT_VERSION) {
    throw new BackupError(
      `the backup is of format ${format.data.format_version}, newer than this switchboard reads (${BACKUP_FORMAT_VERSION}): restore it with the switchboard version that wrote it, or a later one`,
      'backup_newer',
    );
  }
  const header = backupHeader.safeParse(json);
  if (!header.success)
    throw damaged(`its header is malformed (${header.error.issues[0]?.message})`);
  return header.data;
}
