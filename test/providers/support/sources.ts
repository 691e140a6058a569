import { createHmac, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { TestServer } from '../../support/test-server.js';

const FIXTURES = new URL('../../fixtures/', import.meta.url);

/** A provider's fixture exactly as stored: the bytes that are signed are the bytes that are sent. */
export function readSourceFixture(provider: string, name: string): Promise<string> {
  return readFile(new URL(`${provider}/${name}.json`, FIXTURES), 'utf8');
}

export interface AddedSource {
  name: string;
  kind: string;
  url: string;
  secret: string;
}

/** Registers a source through the admin API; the secret is the one switchboard made, or `secret`. */
export async function addSource(
  server: TestServer,
  body: {
    kind: string;
    name: string;
    secret?: string;
    queues?: string[];
    api_url?: string;
    api_token?: string;
  },
): Promise<AddedSource> {
  const { status, body: answer } = await server.api(server.adminToken, 'POST', '/sources', body);
  if (status !== 201)
    throw new Error(`adding source ${body.name}: ${status} ${JSON.stringify(answer)}`);
  return { ...answer.source, secret: body.secret ?? answer.secret };
}

/** Saves rules (YAML text) for a source; resolves with the dry run. */
export async function setRules(server: TestServer, name: string, rules: string) {
  const { status, body } = await server.api(server.adminToken, 'PUT', `/sources/${name}/rules`, {
    rules,
  });
  if (status !== 200) throw new Error(`rules for ${name}: ${status} ${JSON.stringify(body)}`);
  return body;
}

export interface Posted {
  status: number;
  body: any;
  id: string;
}

/** POSTs raw bytes to a source's webhook URL with these headers. */
export async function postToSource(
  server: TestServer,
  name: string,
  body: string | Buffer,
  headers: Record<string, string | null>,
  id: string,
): Promise<Posted> {
  const response = await fetch(`${server.url}/api/sources/${name}/webhooks`, {
    method: 'POST',
    headers: Object.fromEntries(
      Object.entries({ 'content-type': 'application/json', ...headers }).filter(
        ([, value]) => value !== null,
      ),
    ) as Record<string, string>,
    body,
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // kept as text
  }
  return { status: response.status, body: parsed, id };
}

export const hmacHex = (secret: string, body: string | Buffer) =>
  createHmac('sha256', secret).update(body).digest('hex');

/** As Gitea (or Forgejo) delivers: its headers, and the body's HMAC under the secret. */
export function giteaHeaders(
  kind: 'gitea' | 'forgejo',
  event: string,
  body: string | Buffer,
  secret: string,
  id: string = randomUUID(),
): Record<string, string> {
  const signature = hmacHex(secret, body);
  const prefix = kind === 'forgejo' ? 'X-Forgejo' : 'X-Gitea';
  return {
    [`${prefix}-Delivery`]: id,
    [`${prefix}-Event`]: event,
    [`${prefix}-Signature`]: signature,
    ...(kind === 'forgejo'
      ? { 'X-Gitea-Delivery': id, 'X-Gitea-Event': event, 'X-Gitea-Signature': signature }
      : {}),
    'X-Hub-Signature-256': `sha256=${signature}`,
  };
}

/** The source's recorded delivery (not a duplicate receipt) and the todo it made. */
export async function outcomeOf(server: TestServer, source: string, deliveryId: string) {
  const [row] = await server.sql`
    select d.disposition, d.note, d.event, d.action, d.subject, d.actor, t.id as todo_id, t.queue,
           t.kind, t.title, t.body, t.url, t.state, t.source, t.attributed_to, t.meta
    from deliveries d left join todos t on t.id = d.todo_id
    where d.source = ${source} and d.delivery_id = ${deliveryId} and d.disposition <> 'duplicate'`;
  return row;
}

export async function countSourceRows(server: TestServer) {
  const [row] = await server.sql<[{ deliveries: number; todos: number }]>`
    select (select count(*)::int from deliveries where source <> 'github') as deliveries,
           (select count(*)::int from todos) as todos`;
  return row;
}

/** GitLab's event header for each object kind. */
export const GITLAB_EVENTS: Record<string, string> = {
  note: 'Note Hook',
  merge_request: 'Merge Request Hook',
  pipeline: 'Pipeline Hook',
  issue: 'Issue Hook',
};

/** As GitLab 17.4 on delivers with a secret token: X-Gitlab-Token, its event and ids. */
export function gitlabHeaders(objectKind: string, token: string, id: string = randomUUID()) {
  return {
    'X-Gitlab-Event': GITLAB_EVENTS[objectKind] ?? 'System Hook',
    'X-Gitlab-Token': token,
    'X-Gitlab-Event-UUID': randomUUID(),
    'X-Gitlab-Webhook-UUID': '6e8cfb41-37c5-4c5b-9f3c-1f2c9a4b7d10',
    'X-Gitlab-Instance': 'https://gitlab.com',
    'Idempotency-Key': id,
    'User-Agent': 'GitLab/17.6.0',
  };
}

/**
 * A Linear body is signed with its own `webhookTimestamp` inside, which must be within 60 s of
 * now: the stored fixture's is replaced with now, then the result is signed.
 */
export function freshLinearBody(fixture: string, now = Date.now()): string {
  return fixture.replace(/"webhookTimestamp": \d+/, `"webhookTimestamp": ${now}`);
}

export function linearHeaders(
  body: string | Buffer,
  secret: string,
  event: string,
  id: string = randomUUID(),
) {
  return {
    'Linear-Delivery': id,
    'Linear-Event': event,
    'Linear-Signature': hmacHex(secret, body),
    'User-Agent': 'Linear-Webhook',
  };
}

/** Standard Webhooks headers, signed by the reference library. */
export async function standardHeaders(
  body: string,
  secret: string,
  id: string = `msg_${randomUUID().replace(/-/g, '')}`,
  at: Date = new Date(),
) {
  const { Webhook } = await import('standardwebhooks');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}
