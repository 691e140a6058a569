import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { deliver } from '../github/deliver.js';
import { isolateFromGitHub } from '../github/github-app.js';
import {
  addSource,
  giteaHeaders,
  postToSource,
  readSourceFixture,
  setRules,
  type AddedSource,
} from '../providers/support/sources.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { signInByFetch, type FetchSession } from './support/push.js';

// The console's Deliveries and Quarantine pages show every provider's deliveries and why each
// quarantined todo waits, as the API does — read from the same read models (src/intake).

let server: TestServer;
let session: FetchSession;
let gitea: AddedSource;

beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer();
  gitea = await addSource(server, { kind: 'gitea', name: 'code' });
  // The pull request's author (unknwon) is trusted; the stranger who comments is not.
  await setRules(server, 'code', 'trust:\n  logins: [unknwon]\n');
  session = await signInByFetch(server, server.adminToken);
});
afterAll(() => server?.stop());

async function toGitea(fixture: string) {
  const body = await readSourceFixture('gitea', fixture);
  const id = randomUUID();
  const headers = giteaHeaders('gitea', fixture.split('.')[0]!, body, gitea.secret, id);
  const sent = await postToSource(server, 'code', body, headers, id);
  expect(sent.status).toBe(200);
  return sent.body.delivery as { id: number; disposition: string; todo_id: number | null };
}

const page = async (path: string) =>
  (await fetch(`${server.url}${path}`, { headers: { cookie: session.cookie } })).text();

test("regression: the console's Deliveries page showed GitHub's deliveries only", async () => {
  const fromGitHub = await deliver(server.url, 'ping');
  expect(fromGitHub.status).toBe(200);
  const made = await toGitea('pull_request.opened');
  expect(made.disposition).toBe('created');

  const shown = await page('/deliveries');
  const row = (id: number) =>
    new RegExp(`<tr id="live-delivery-${id}"[\\s\\S]*?</tr>`).exec(shown)?.[0];
  expect(row(made.id)).toMatch(
    /<td>code<\/td>\s*<td>pull_request\.opened<\/td>\s*<td>gogits\/hello-world<\/td>/,
  );
  expect(row(made.id)).toMatch(/>created</);
  expect(row(JSON.parse(fromGitHub.body).delivery.id)).toMatch(/<td>github<\/td>\s*<td>ping<\/td>/);
});

test("regression: the console's Quarantine page gave a source's quarantined todo a generic reason", async () => {
  const held = await toGitea('issue_comment.created.untrusted');
  expect(held.disposition).toBe('quarantined');
  const shown = await page('/quarantine');
  const card = new RegExp(`<article[^>]*id="live-todo-${held.todo_id}"[\\s\\S]*?</article>`).exec(
    shown,
  )?.[0];
  expect(card).toMatch(
    /<strong>Why:<\/strong>\s*stranger is not on this source(&#39;|')s trust\.logins/,
  );
  expect(card).not.toMatch(/its sender is not trusted/);
});
