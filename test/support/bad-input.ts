import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import type postgres from 'postgres';
import { expect } from 'vitest';

const BAD = new URL('../fixtures/bad/', import.meta.url);

/** A file of the bad-input corpus (test/fixtures/bad/), as raw bytes. */
export function readBad(name: string): Buffer {
  return readFileSync(new URL(name, BAD));
}

/** The raw request bodies of the corpus (test/fixtures/bad/bodies/), by file name. */
export const BAD_BODIES = [
  'malformed.json',
  'truncated.json',
  'single-quoted.json',
  'form-encoded.txt',
  'string.json',
  'number.json',
  'null.json',
  'array.json',
  'empty.json',
  'nul-byte.bin',
  'invalid-utf8.bin',
  'overlong-utf8.bin',
  'surrogate-utf8.bin',
  'utf16le.bin',
] as const;

export interface HostileString {
  name: string;
  /** What is sent. */
  text: string;
  /** What a title becomes (neutraliseLine: one line, no controls or channel tags). */
  title: string;
  /** What a body becomes (neutraliseText: controls and channel tags out, newlines kept). */
  body: string;
}

/** test/fixtures/bad/strings.json: text for every text field, and what becomes of it. */
export const STRINGS = JSON.parse(readBad('strings.json').toString('utf8')) as {
  /** Accepted by every free-text field; stored and returned exactly as sent (titles and bodies: neutralised). */
  stored_as_sent: HostileString[];
  /** Refused by every field stored as sent (PostgreSQL cannot hold it); titles and bodies: neutralised. */
  not_storable: HostileString[];
};

/**
 * POSTs to `url` with `headers` declaring a Content-Length, sends one byte of it, and resolves
 * with the answer: a server that waited for every declared byte would never answer.
 */
export function postDeclaringLength(
  url: URL,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers });
    req.on('response', (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => {
        req.destroy();
        resolve({ status: response.statusCode!, text });
      });
    });
    req.on('error', reject);
    req.write('{');
  });
}

/** Bytes as a request body sent in chunks of `size`, with no Content-Length (chunked encoding). */
export function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += size)
        controller.enqueue(bytes.subarray(at, at + size));
      controller.close();
    },
  });
}

const TABLES = [
  'principals',
  'tokens',
  'todos',
  'todo_events',
  'deliveries',
  'outbox',
  'consumer_webhooks',
] as const;

/**
 * Row counts of every table a request could write to (not the dispatcher's own bookkeeping).
 * History counts only what humans and agents did: switchboard writes some on its own, in its own
 * time (the dispatcher's `wake_stored` after a todo is made, the sweeper's `retry_due` after a
 * failure), and a request under test is never the system's.
 */
export async function countRows(sql: postgres.Sql): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of TABLES) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(table)}
      ${table === 'todo_events' ? sql`where actor_kind <> 'system'` : sql``}`;
    counts[table] = row!.n;
  }
  return counts;
}

/**
 * What no answer may carry: a stack trace, a source location, SQL or a driver's message. Checked
 * on every refusal the bad-input tests get; `echoed` is input the answer may quote back (a bad
 * queue name is named in its refusal), left out of the check.
 */
export function expectNothingLeaked(text: string, echoed: string[] = []): void {
  let rest = text;
  for (const input of echoed) {
    // As sent, JSON-escaped, and cut to the 80 characters a refusal quotes.
    for (const form of [input, JSON.stringify(input), JSON.stringify(input.slice(0, 80))]) {
      rest = rest.split(form).join('').split(JSON.stringify(form).slice(1, -1)).join('');
    }
  }
  expect(rest).not.toMatch(/\bat [\w.<>]+ \(|\.(ts|js):\d+|node_modules/);
  expect(rest).not.toMatch(
    /\b(select|insert into|update \w+ set|delete from)\b|PostgresError|syntax error at|invalid byte sequence|violates|call stack/i,
  );
}
