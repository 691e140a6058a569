import { Readable } from 'node:stream';
import { expect, test } from 'vitest';
import { BackupError, createBackupReader } from '../../src/platform/db/backup-file.js';

/** A backup's text after gunzip: COPY's escapes included, an empty table, a row that is `\\.`. */
const TEXT = [
  '{"header":true}\n',
  '{"table":"a"}\n',
  '1\tplain\n2\ta tab\\there, a newline\\nthere\n3\t\\\\.\n4\t\\N\n',
  '\\.\n',
  '{"table":"empty"}\n',
  '\\.\n',
  '{"table":"b"}\n',
  '\\\\.\n',
  '\\.\n',
  '{"end":true}\n',
].join('');

function chunked(text: string, sizes: () => number): AsyncIterable<Buffer> {
  return Readable.from(pieces(text, sizes));
}

function* pieces(text: string, sizes: () => number): Generator<Buffer> {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length;) {
    const size = Math.min(sizes(), bytes.length - at);
    yield bytes.subarray(at, at + size);
    at += size;
  }
}

const damaged = (why: string) => new BackupError(why, 'backup_unreadable');

/** Reads TEXT back the way a restore does: lines, and each table's rows up to their end. */
async function readBack(source: AsyncIterable<Buffer>) {
  const reader = createBackupReader(source, damaged);
  const read: { line: string; rows?: string; count?: number }[] = [];
  for (let line = await reader.line(); line !== undefined; line = await reader.line()) {
    if (!line.startsWith('{"table"')) {
      read.push({ line });
      continue;
    }
    const count = { rows: 0 };
    const chunks: Buffer[] = [];
    for await (const chunk of reader.rows(count)) chunks.push(chunk);
    read.push({ line, rows: Buffer.concat(chunks).toString(), count: count.rows });
  }
  expect(await reader.atEnd()).toBe(true);
  return read;
}

const expected = [
  { line: '{"header":true}' },
  {
    line: '{"table":"a"}',
    rows: '1\tplain\n2\ta tab\\there, a newline\\nthere\n3\t\\\\.\n4\t\\N\n',
    count: 4,
  },
  { line: '{"table":"empty"}', rows: '', count: 0 },
  { line: '{"table":"b"}', rows: '\\\\.\n', count: 1 },
  { line: '{"end":true}' },
];

test('rows and lines come out whole wherever the chunks of the file end', async () => {
  for (let size = 1; size <= 24; size++) {
    expect(await readBack(chunked(TEXT, () => size)), `chunks of ${size}`).toEqual(expected);
  }
  let seed = 7;
  const random = () => ((seed = (seed * 48271) % 2147483647) % 9) + 1;
  for (let round = 0; round < 50; round++) {
    expect(await readBack(chunked(TEXT, random))).toEqual(expected);
  }
});

test('a file cut short inside a table, or inside a line, is damaged', async () => {
  const cut = TEXT.indexOf('3\t');
  await expect(readBack(chunked(TEXT.slice(0, cut), () => 5))).rejects.toThrow(
    'it ends inside a table',
  );
  await expect(readBack(chunked('{"header":tr', () => 5))).rejects.toThrow('it ends inside a line');
});
