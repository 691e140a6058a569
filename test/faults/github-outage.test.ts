import nock from 'nock';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { deliver, readFixture } from '../github/deliver.js';
import { isolateFromGitHub, testAppCredentials } from '../github/github-app.js';
import { fakeGitHub, type FakeGitHub } from '../support/fake-github.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// GitHub's API fails for a while — 5xx, requests that hang, primary and secondary rate limits —
// while deliveries keep coming in and todos are completed. Ingestion must go on (2xx within the
// 5 s budget, todos made), every write-back must wait in the outbox, and once GitHub answers
// again each one must reach it exactly once. Two server processes share the outbox, as they may
// in production; GitHub is faked with nock, the network off.

const REPO = '/repos/Codertocat/Hello-World';
// An attempt's deadline leaves room for a loaded machine: a write GitHub took whose answer is
// read only after the deadline is retried, and sent twice (at least once, as in production,
// where the deadline is 20 s).
const WRITE_BACK = {
  pollIntervalMs: 50,
  // 500 ms was not room enough at a load average of 16: a reaction GitHub took was retried.
  requestTimeoutMs: 1500,
  leaseMs: 2500,
  retryBaseMs: 50,
  retryMaxMs: 300,
  // GitHub is down for seconds here, not hours: nothing may be given up meanwhile.
  maxAttempts: 10_000,
};

let server: TestServer;
let second: TestServer;
let github: FakeGitHub;
const app = testAppCredentials();

beforeAll(async () => {
  isolateFromGitHub();
  github = fakeGitHub();
  // The production budgets for a delivery (5 s) and for its repository config (2.5 s).
  server = await startTestServer({ github: app, githubTuning: { writeBack: WRITE_BACK } });
  second = await startTestServer({
    schema: server.schema,
    github: app,
    githubTuning: { writeBack: WRITE_BACK },
  });
});
afterAll(async () => {
  github?.set('up');
  await second?.stop();
  await server?.stop();
  github?.restore();
  nock.cleanAll();
  nock.enableNetConnect();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fixture made about an issue (and comment) of its own, so each write-back has its own target. */
async function variant(fixture: string, n: number): Promise<string> {
  const payload = JSON.parse(await readFixture(fixture));
  payload.issue.number = n;
  payload.issue.html_url = payload.issue.html_url.replace(/\d+$/, String(n));
  if (payload.comment) payload.comment.id = 9_000_000 + n;
  return JSON.stringify(payload);
}

/** Delivers concurrently; each answer with its status and how long it took. */
async function deliverAll(fixtures: [string, number][]) {
  return Promise.all(
    fixtures.map(async ([fixture, n]) => {
      const started = performance.now();
      const sent = await deliver(server.url, fixture, { body: await variant(fixture, n) });
      return { ...sent, fixture, n, ms: performance.now() - started };
    }),
  );
}

/** The outbox rows about these issues. */
const outboxOf = (issues: number[]) =>
  server.sql<{ id: number; state: string; attempts: number }[]>`
    select id, state, attempts from outbox
    where (target->>'issue_number')::bigint = any(${issues}) order by id`;

/** Waits until no write-back about these issues is pending, then a little longer for a late duplicate. */
async function allSent(issues: number[]) {
  await expect
    .poll(async () => (await outboxOf(issues)).filter((row) => row.state !== 'sent').length, {
      timeout: 10_000,
    })
    .toBe(0);
  await sleep(1000);
}

/** Writes GitHub took for these issues. */
const takenFor = (issues: number[]) =>
  github.taken.filter((write) =>
    issues.some((n) => write.includes(`/issues/${n}/`) || write.includes(`/${9_000_000 + n}/`)),
  );

test('GitHub down for a while: ingestion goes on, write-backs wait, then each goes out once', async () => {
  const labeled = 'issues.labeled.switchboard';
  const command = 'issue_comment.created.command';

  // 1. Nothing GitHub is asked answers: no token, no repository config, no write-back.
  github.set('hang');
  const hanging = await deliverAll([
    [labeled, 101],
    [labeled, 102],
    [command, 103],
    [command, 104],
  ]);
  // 2. The App gets its token, but the API answers only with errors and rate limits.
  github.set({ tokens: 'up', reads: 'failing', writes: 'failing' });
  const failing = await deliverAll([
    [labeled, 105],
    [labeled, 106],
    [command, 107],
    [command, 108],
    [labeled, 109],
    [command, 110],
  ]);
  const deliveries = [...hanging, ...failing];
  const issues = deliveries.map((sent) => sent.n);
  for (const sent of deliveries) {
    expect(sent.status, sent.body).toBe(200);
    expect(sent.ms).toBeLessThan(5000);
  }
  const recorded = await server.sql<
    { delivery_id: string; disposition: string; todo_id: number; note: string | null }[]
  >`select delivery_id, disposition, todo_id, note from deliveries order by id`;
  expect(recorded.map((row) => row.delivery_id).sort()).toEqual(
    deliveries.map((sent) => sent.id).sort(),
  );
  const noteOf = (id: string) => recorded.find((row) => row.delivery_id === id)!.note;
  for (const row of recorded) expect(row.disposition).toBe('created');
  for (const sent of hanging) {
    expect(noteOf(sent.id)).toBe(
      'repository config not read: GitHub did not answer within 2500 ms; defaults used',
    );
  }
  for (const sent of failing)
    expect(noteOf(sent.id)).toMatch(
      /^repository config not read: GitHub answered (500|502|503|403|429); defaults used$/,
    );

  // The todos made from comments are worked and completed meanwhile: their summaries queue up.
  const comments = deliveries.filter((sent) => sent.fixture === command);
  for (const sent of comments) {
    const id = recorded.find((row) => row.delivery_id === sent.id)!.todo_id;
    const claimed = await server.api(server.adminToken, 'POST', `/todos/${id}/claim`);
    const done = await server.api(server.adminToken, 'POST', `/todos/${id}/complete`, {
      lease_token: claimed.body.todo.lease_token,
      summary: `Done with issue ${sent.n}.`,
    });
    expect(done.status).toBe(200);
  }

  // Both processes keep trying; nothing is sent and nothing is given up.
  const failuresBefore = github.failures();
  await expect.poll(() => github.failures() - failuresBefore).toBeGreaterThan(40);
  const during = await outboxOf(issues);
  expect(during).toHaveLength(deliveries.length + comments.length);
  expect(during.filter((row) => row.state !== 'pending')).toEqual([]);
  expect(takenFor(issues)).toEqual([]);

  // 3. GitHub is slow before it is back: every write hangs until the sender gives up on it.
  github.set({ writes: 'hang' });
  await sleep(1500);
  // 4. GitHub answers again: every write-back goes out, once.
  github.set('up');
  await allSent(issues);
  const expected = [
    ...deliveries.map((sent) =>
      sent.fixture === labeled
        ? `POST ${REPO}/issues/${sent.n}/reactions {"content":"eyes"}`
        : `POST ${REPO}/issues/comments/${9_000_000 + sent.n}/reactions {"content":"eyes"}`,
    ),
    ...comments.map((sent) =>
      expect.stringMatching(
        new RegExp(
          `^POST ${REPO}/issues/${sent.n}/comments \\{"body":"Done with issue ${sent.n}\\.`,
        ),
      ),
    ),
  ];
  const taken = takenFor(issues);
  expect(taken).toHaveLength(expected.length);
  expect(taken).toEqual(expect.arrayContaining(expected));
  expect(await server.sql`select id from todos where source = 'github'`).toHaveLength(
    deliveries.length,
  );
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
});

/** 👀 write-backs for these issues, queued at once (one statement), as a busy minute would leave them. */
async function queueReactions(issues: number[], installation: number): Promise<void> {
  const created = await server.api(server.adminToken, 'POST', '/todos', {
    queue: 'issues',
    title: `reactions for ${issues.join(', ')}`,
  });
  await server.sql`
    insert into outbox (todo_id, source, kind, write_back, target, body)
    select ${created.body.todo.id}, 'github', 'github', 'reaction',
           jsonb_build_object('installation_id', ${installation}::bigint, 'owner', 'Codertocat',
                              'repo', 'Hello-World', 'issue_number', n),
           'eyes'
    from unnest(${issues}::bigint[]) as n`;
}

test('regression: write-backs taken in one batch outlived their lease behind a hanging GitHub and were sent twice', async () => {
  // Writes hang; the first process takes what is due, the second takes over whatever it holds
  // past the lease. GitHub comes back while both are at it.
  github.set({ tokens: 'up', reads: 'up', writes: 'hang' });
  const issues = [201, 202, 203, 204, 205, 206, 207, 208];
  await queueReactions(issues, 1);
  await sleep(WRITE_BACK.leaseMs + 1000); // longer than a lease
  github.set('up');
  await allSent(issues);
  expect(takenFor(issues).sort()).toEqual(
    issues.map((n) => `POST ${REPO}/issues/${n}/reactions {"content":"eyes"}`).sort(),
  );
});

test('an installation token request that hangs past the lease: the write-back still goes out once', async () => {
  // A new installation: no process has its token yet, and GitHub does not answer for it.
  github.set({ tokens: 'hang', reads: 'up', writes: 'up' });
  const issues = [301, 302];
  await queueReactions(issues, 2);
  await sleep(WRITE_BACK.leaseMs + 1000); // longer than a lease
  // The token requests are answered at last, and writes go through again.
  github.set('up');
  await allSent(issues);
  expect(takenFor(issues).sort()).toEqual(
    issues.map((n) => `POST ${REPO}/issues/${n}/reactions {"content":"eyes"}`).sort(),
  );
});

test('regression: a hanging installation token request held the outbox sender, and shutdown, past the attempt deadline', async () => {
  github.set({ tokens: 'hang', reads: 'up', writes: 'up' });
  const third = await startTestServer({
    schema: server.schema,
    github: app,
    githubTuning: { writeBack: WRITE_BACK },
  });
  await queueReactions([401], 3);
  // Each attempt is given up at its deadline and tried again later, not waited on for good.
  await expect
    .poll(async () => (await outboxOf([401]))[0]?.attempts, { timeout: 15_000 })
    .toBeGreaterThanOrEqual(3);
  const [row] =
    await server.sql`select last_error from outbox where target->>'issue_number' = '401'`;
  expect(row!.last_error).toBe(`timed out after ${WRITE_BACK.requestTimeoutMs} ms`);
  const stopping = performance.now();
  await third.stop();
  // An attempt in flight ends at its deadline, and stop waits for no more than that.
  expect(performance.now() - stopping).toBeLessThan(WRITE_BACK.requestTimeoutMs + 1000);
  github.set('up');
  await allSent([401]);
  expect(takenFor([401])).toEqual([`POST ${REPO}/issues/401/reactions {"content":"eyes"}`]);
});
