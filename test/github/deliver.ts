import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { sign } from '@octokit/webhooks-methods';
import type postgres from 'postgres';
import { WEBHOOK_SECRET } from '../support/test-server.js';

const FIXTURES = new URL('../fixtures/github/', import.meta.url);

/** A fixture exactly as stored: the bytes that are signed are the bytes that are sent. */
export function readFixture(name: string): Promise<string> {
  return readFile(new URL(`${name}.json`, FIXTURES), 'utf8');
}

export interface Delivered {
  id: string;
  status: number;
  body: string;
}

/**
 * POSTs a fixture (`issue_comment.created.command` is event `issue_comment`) to the webhook
 * endpoint as GitHub would: signed with the test secret, with a fresh delivery id unless given.
 * `signature: null` sends none; `secret` signs with another secret; `signal` gives up on it.
 */
export async function deliver(
  url: string,
  fixture: string,
  options: {
    id?: string;
    secret?: string;
    signature?: string | null;
    body?: string;
    signal?: AbortSignal;
  } = {},
): Promise<Delivered> {
  const body = options.body ?? (await readFixture(fixture));
  const id = options.id ?? randomUUID();
  const signature =
    options.signature === undefined
      ? await sign(options.secret ?? WEBHOOK_SECRET, body)
      : options.signature;
  const response = await fetch(`${url}/api/github/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': fixture.split('.')[0]!,
      'x-github-delivery': id,
      ...(signature === null ? {} : { 'x-hub-signature-256': signature }),
    },
    body,
    signal: options.signal,
  });
  return { id, status: response.status, body: await response.text() };
}

/** What a delivery id left in the ledger: its delivery rows, and the todos it made (by their key). */
export async function storedFor(
  sql: postgres.Sql,
  id: string,
): Promise<{ deliveries: number; todos: number }> {
  const [counts] = await sql<[{ deliveries: number; todos: number }]>`
    select (select count(*)::int from deliveries where delivery_id = ${id}) as deliveries,
           (select count(*)::int from todos where idempotency_key like ${`github:${id}:%`}) as todos`;
  return counts;
}
