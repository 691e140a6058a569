import { createHmac, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readFixture } from '../github/deliver.js';
import { isolateFromGitHub } from '../github/github-app.js';
import {
  addSource,
  freshLinearBody,
  giteaHeaders,
  gitlabHeaders,
  linearHeaders,
  readSourceFixture,
  standardHeaders,
} from '../providers/support/sources.js';
import { postDeclaringLength } from '../support/bad-input.js';
import { startTestServer, WEBHOOK_SECRET, type TestServer } from '../support/test-server.js';

// One status per fault, whichever provider sent the delivery (the table is in src/intake and in
// the README): a bad or missing signature 401, a header the provider always sends missing 400
// naming it, not JSON by its content type (or compressed) 415, too large 413, an unknown source
// 404. Nothing is stored for any of them.

const LINEAR_SECRET = 'lin_wh_status_per_fault_0123456789abcd';
let server: TestServer;
const secrets: Record<string, string> = {};

beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer();
  for (const kind of ['gitea', 'forgejo', 'gitlab', 'linear', 'standard-webhooks'] as const) {
    const added = await addSource(server, {
      kind,
      name: kind,
      ...(kind === 'linear' ? { secret: LINEAR_SECRET } : {}),
    });
    secrets[kind] = added.secret;
  }
});
afterAll(() => server.stop());

interface Signed {
  url: string;
  body: string;
  headers: Record<string, string>;
}

const hex = (secret: string, body: string) =>
  createHmac('sha256', secret).update(body).digest('hex');

/** A delivery each provider would send, signed with `secret` (its own when not given). */
const DELIVERIES: Record<string, (secret?: string) => Promise<Signed>> = {
  github: async (secret = WEBHOOK_SECRET) => {
    const body = await readFixture('issues.labeled.switchboard');
    return {
      url: '/api/github/webhooks',
      body,
      headers: {
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${hex(secret, body)}`,
      },
    };
  },
  gitea: async (secret = secrets.gitea!) => {
    const body = await readSourceFixture('gitea', 'pull_request.opened');
    return {
      url: '/api/sources/gitea/webhooks',
      body,
      headers: giteaHeaders('gitea', 'pull_request', body, secret),
    };
  },
  forgejo: async (secret = secrets.forgejo!) => {
    const body = await readSourceFixture('gitea', 'pull_request.opened');
    return {
      url: '/api/sources/forgejo/webhooks',
      body,
      headers: giteaHeaders('forgejo', 'pull_request', body, secret),
    };
  },
  gitlab: async (secret = secrets.gitlab!) => ({
    url: '/api/sources/gitlab/webhooks',
    body: await readSourceFixture('gitlab', 'merge_request.open'),
    headers: gitlabHeaders('merge_request', secret),
  }),
  linear: async (secret = LINEAR_SECRET) => {
    const body = freshLinearBody(await readSourceFixture('linear', 'Issue.create.labeled'));
    return {
      url: '/api/sources/linear/webhooks',
      body,
      headers: linearHeaders(body, secret, 'Issue'),
    };
  },
  'standard-webhooks': async (secret = secrets['standard-webhooks']!) => {
    const body = await readSourceFixture('standard-webhooks', 'contact.created');
    return {
      url: '/api/sources/standard-webhooks/webhooks',
      body,
      headers: await standardHeaders(body, secret),
    };
  },
};
const PROVIDERS = Object.keys(DELIVERIES);

async function send(
  signed: Signed,
  change: { headers?: Record<string, string | null>; body?: string | Buffer } = {},
) {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries({
    'content-type': 'application/json',
    ...signed.headers,
    ...change.headers,
  }))
    if (value !== null) headers[name] = value;
  const response = await fetch(`${server.url}${signed.url}`, {
    method: 'POST',
    headers,
    body: change.body ?? signed.body,
  });
  return {
    status: response.status,
    body: (await response.json()) as { error: string; code: string },
  };
}

const recorded = async () => {
  const [{ n }] = await server.sql<[{ n: number }]>`select count(*)::int as n from deliveries`;
  return n;
};

/** The delivery is refused with `status` and `code`, and nothing is recorded. */
async function expectRefused(
  sent: Promise<{ status: number; body: { error: string; code: string } }>,
  status: number,
  code: string,
) {
  const before = await recorded();
  const answer = await sent;
  expect(answer, JSON.stringify(answer.body)).toMatchObject({ status, body: { code } });
  expect(await recorded()).toBe(before);
  return answer.body.error;
}

describe.each(PROVIDERS)('%s', (provider) => {
  test('regression: a bad signature was 400 for GitHub and 401 for every other provider', async () => {
    // Another secret, of the shape the provider's secrets have.
    const other =
      provider === 'standard-webhooks'
        ? `whsec_${Buffer.alloc(32, 7).toString('base64')}`
        : 'a-secret-that-is-not-this-sources-0123';
    const signed = await DELIVERIES[provider]!(other);
    await expectRefused(send(signed), 401, 'unauthenticated');
  });

  test('regression: a compressed body was 415 for GitHub and 400 for every other provider', async () => {
    const signed = await DELIVERIES[provider]!();
    await expectRefused(
      send(signed, { headers: { 'content-encoding': 'gzip' }, body: gzipSync(signed.body) }),
      415,
      'unsupported_media_type',
    );
  });

  test('a body declared over the 25 MB cap: 413', async () => {
    const signed = await DELIVERIES[provider]!();
    const before = await recorded();
    const answer = await postDeclaringLength(new URL(signed.url, server.url), {
      ...signed.headers,
      'content-type': 'application/json',
      'content-length': String(25 * 1024 * 1024 + 1),
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.text)).toMatchObject({ code: 'too_large' });
    expect(await recorded()).toBe(before);
  });
});

// GitLab disables a hook that keeps getting 4xx answers: it alone is answered 200 (and the
// delivery recorded `unreadable`) for a missing header or a body that is not JSON.
describe.each(PROVIDERS.filter((provider) => provider !== 'gitlab'))(
  '%s, not lenient',
  (provider) => {
    test('not JSON by its content type: 415', async () => {
      const signed = await DELIVERIES[provider]!();
      await expectRefused(
        send(signed, { headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      );
    });
  },
);

test.each([
  ['github', 'x-github-event', 'required header missing: x-github-event (GitHub sends it'],
  ['gitea', 'X-Gitea-Event', 'required header missing: X-Gitea-Event (Gitea sends it'],
  ['linear', 'Linear-Delivery', 'required header missing: Linear-Delivery (Linear sends it'],
])('%s without %s, a header it always sends: 400 naming it', async (provider, name, said) => {
  const signed = await DELIVERIES[provider]!();
  const error = await expectRefused(send(signed, { headers: { [name]: null } }), 400, 'invalid');
  expect(error).toContain(said);
});

test('a source that does not exist: 404', async () => {
  const signed = await DELIVERIES.gitea!();
  await expectRefused(send({ ...signed, url: '/api/sources/nobody/webhooks' }), 404, 'not_found');
});
