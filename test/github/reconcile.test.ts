import nock from 'nock';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createCliHome, parseJson, runCli, type CliHome } from '../cli/support/run-cli.js';
import { readCredentialsFile } from '../../src/platform/config/credentials-file.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { readFixture } from './deliver.js';
import { fakeDeliveryLog, type FakeDeliveryLog } from './fake-delivery-log.js';
import {
  GITHUB_API,
  isolateFromGitHub,
  nockInstallationToken,
  nockNoRepositoryConfig,
  testAppCredentials,
} from './github-app.js';

// GitHub never retries a failed delivery. These tests fake the App's delivery log (nock, the
// network off): events "sent while the server was down" are in the log, failed, and were never
// received; after a reconcile pass they arrive — each exactly once, from one process or two —
// and a second pass asks for nothing again.

const app = testAppCredentials();
/** The passes these tests run: no pacing, small pages (so the cursor is followed), on start only. */
const TUNING = {
  reconcile: { spacingMs: 0, perPage: 2, intervalMs: 3_600_000, requestTimeoutMs: 5000 },
  writeBack: { pollIntervalMs: 50 },
};

let server: TestServer;
/** Where GitHub sends deliveries: the App's webhook URL, one server. */
let webhookUrl: string;
/** The schema every server of these tests shares: it outlives each of them. */
let db: TestDatabase;
let adminToken: string;
let log: FakeDeliveryLog;
let home: CliHome;
const running: TestServer[] = [];

const start = async (options: Parameters<typeof startTestServer>[0] = {}) => {
  const started = await startTestServer({
    github: app,
    githubTuning: TUNING,
    schema: db.schema,
    ...options,
  });
  running.push(started);
  return started;
};
const stop = async (stopped: TestServer) => {
  running.splice(running.indexOf(stopped), 1);
  await stopped.stop();
};

beforeAll(async () => {
  isolateFromGitHub();
  nockInstallationToken();
  nockNoRepositoryConfig();
  // The 👀 on each issue that becomes a todo.
  nock(GITHUB_API)
    .persist()
    .post(/^\/repos\/Codertocat\/Hello-World\/issues\/\d+\/reactions$/)
    .reply(201, { id: 1, content: 'eyes' });
  log = fakeDeliveryLog({ ...app, serverUrl: () => webhookUrl });
  [home, db] = await Promise.all([createCliHome(), createTestDatabase()]);
  server = await start();
  // The first start made the admin, and saved its token in that server's credentials file.
  adminToken = (await readCredentialsFile(server.credentialsFile))!.servers[server.url]!.token;
  webhookUrl = server.url;
});
afterAll(async () => {
  for (const left of [...running]) await left.stop();
  await home?.remove();
  await db?.drop();
  nock.cleanAll();
  nock.enableNetConnect();
});

let issues = 500;
/** A labelled issue of its own (each event makes its own todo, with its own body). */
async function labeledIssue(): Promise<string> {
  const payload = JSON.parse(await readFixture('issues.labeled.switchboard'));
  const n = ++issues;
  payload.issue.number = n;
  payload.issue.title = `Issue ${n}`;
  payload.issue.html_url = payload.issue.html_url.replace(/\d+$/, String(n));
  return JSON.stringify(payload);
}

/** The records of one event: its delivery rows and the todos made from it. */
async function recordsOf(guid: string) {
  const rows = await server.sql<{ disposition: string; todo_id: number | null }[]>`
    select disposition, todo_id from deliveries where delivery_id = ${guid} order by id`;
  const todos =
    await server.sql`select id from todos where meta->'github'->>'delivery_id' = ${guid}`;
  return { rows, todos: todos.length };
}

const admin = () => ({ ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: adminToken });

async function reconcileByHand(args: string[] = []) {
  const result = await runCli(['deliveries', 'reconcile', '--json', ...args], admin());
  expect(result.code, result.stderr).toBe(0);
  await log.settled();
  return parseJson(result).reconcile;
}

describe.sequential('reconcile', () => {
  test('deliveries sent while the server was down arrive after it starts again, each exactly once', async () => {
    // Up: one event arrives as usual.
    const received = await log.send('issues', await labeledIssue());
    expect(received.status).toBe(200);

    // Down: GitHub cannot connect, or a proxy in front answers 502; one it thinks went through
    // (200 from something that was not switchboard) never reached it either.
    await stop(server);
    const lost = [
      log.logged('issues', await labeledIssue(), {
        status_code: 0,
        status: 'failed to connect to host',
      }),
      log.logged('issues', await labeledIssue(), {
        status_code: 0,
        status: 'failed to connect to host',
      }),
      log.logged('issues', await labeledIssue(), {
        status_code: 502,
        status: 'Invalid HTTP Response: 502',
      }),
      log.logged('issues', await labeledIssue(), { status_code: 200, status: 'OK' }),
    ];

    // Up again: the pass on start asks for each, and GitHub delivers them.
    server = await start();
    webhookUrl = server.url;
    await expect
      .poll(
        async () => (await Promise.all(lost.map(recordsOf))).filter((r) => r.todos === 1).length,
      )
      .toBe(lost.length);
    await log.settled();
    for (const guid of lost) {
      expect(log.requestsFor(guid)).toBe(1);
      const { rows, todos } = await recordsOf(guid);
      expect(rows).toEqual([{ disposition: 'created', todo_id: expect.any(Number) }]);
      expect(todos).toBe(1);
    }
    // The one received while up was never asked for.
    expect(log.requestsFor(received.guid)).toBe(0);
    expect((await recordsOf(received.guid)).rows).toHaveLength(1);
    // The log was read page by page (2 a page), following GitHub's cursor.
    expect(log.pagesRead).toBeGreaterThanOrEqual(3);
    const asked = await server.sql`
      select guid, requests, accepted, error, status_code from github_redeliveries order by guid`;
    expect(asked).toEqual(
      lost
        .map((guid) => ({
          guid,
          requests: 1,
          accepted: true,
          error: null,
          status_code: expect.any(Number),
        }))
        .sort((a, b) => a.guid.localeCompare(b.guid)),
    );

    // A second pass, by hand: everything is recorded, nothing is asked for again.
    const before = log.redeliveryRequests.length;
    const report = await reconcileByHand();
    expect(report).toMatchObject({ events: 5, recorded: 5, missing: [] });
    expect(report.listed).toBe(log.attempts.length);
    expect(log.redeliveryRequests.length).toBe(before);
    for (const guid of [received.guid, ...lost])
      expect((await recordsOf(guid)).rows).toHaveLength(1);

    const human = await runCli(['deliveries', 'reconcile'], admin());
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toMatch(
      /^GitHub's delivery log since \S+Z: \d+ attempts of 5 events, 5 recorded here, 0 missing\n$/,
    );
  });

  test('two processes starting at once ask for each lost event once', async () => {
    await stop(server);
    const lost = await Promise.all(
      [1, 2, 3, 4, 5].map(async () => log.logged('issues', await labeledIssue())),
    );
    const [first, second] = await Promise.all([start(), start()]);
    server = first!;
    webhookUrl = first.url;
    await expect
      .poll(
        async () => (await Promise.all(lost.map(recordsOf))).filter((r) => r.todos === 1).length,
      )
      .toBe(lost.length);
    await log.settled();
    for (const guid of lost) {
      expect(log.requestsFor(guid)).toBe(1);
      expect((await recordsOf(guid)).rows).toEqual([
        { disposition: 'created', todo_id: expect.any(Number) },
      ]);
    }
    await stop(second);
  });

  test('a redelivery that fails too is asked for again, three times in all, then given up', async () => {
    const guid = log.logged('issues', await labeledIssue());
    log.failRedeliveries(guid, 10);
    const outcomes = [];
    for (let pass = 0; pass < 4; pass++) {
      const report = await reconcileByHand(['--since', '1h']);
      const entry = report.missing.find((missing: { guid: string }) => missing.guid === guid);
      outcomes.push([entry.outcome, entry.requests]);
    }
    expect(outcomes).toEqual([
      ['requested', 1],
      ['requested', 2],
      ['requested', 3],
      ['given_up', 3],
    ]);
    expect(log.requestsFor(guid)).toBe(3);
    expect((await recordsOf(guid)).rows).toEqual([]);
    const human = await runCli(['deliveries', 'reconcile', '--since', '1h'], admin());
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^GUID\s+EVENT\s+DELIVERED\s+STATUS\s+ASKED\s+OUTCOME$/m);
    expect(human.stdout).toMatch(
      new RegExp(
        `^${guid}\\s+issues\\.labeled\\s+\\S+Z\\s+0 failed to connect to host\\s+3×\\s+given up$`,
        'm',
      ),
    );
  });

  test('an event recorded only as a duplicate (its body seen before under another id) arrived, and is not asked for', async () => {
    const guid = log.logged('issues', await labeledIssue(), { status_code: 200, status: 'OK' });
    await server.sql`
      insert into deliveries (source, kind, delivery_id, event, action, disposition, note, body_sha256)
      values ('github', 'github', ${guid}, 'issues', 'labeled', 'duplicate', 'a replay of delivery 1', ${Buffer.alloc(32)})`;
    const report = await reconcileByHand(['--since', '1h']);
    expect(report.missing.map((missing: { guid: string }) => missing.guid)).not.toContain(guid);
    expect(log.requestsFor(guid)).toBe(0);
  });

  test('a redelivery GitHub has not made yet is waited for, not asked for twice', async () => {
    const guid = log.logged('issues', await labeledIssue());
    const release = log.holdRedeliveries();
    const passes = [];
    for (let pass = 0; pass < 2; pass++) {
      const result = await runCli(['deliveries', 'reconcile', '--since', '1h', '--json'], admin());
      expect(result.code, result.stderr).toBe(0);
      const { reconcile } = parseJson(result);
      passes.push(
        reconcile.missing.find((missing: { guid: string }) => missing.guid === guid).outcome,
      );
    }
    expect(passes).toEqual(['requested', 'waiting']);
    release();
    await log.settled();
    expect(log.requestsFor(guid)).toBe(1);
    expect((await recordsOf(guid)).todos).toBe(1);
  });

  test('a pass asks for at most its budget; the rest wait for the next pass', async () => {
    const budgeted = await start({
      githubTuning: { reconcile: { ...TUNING.reconcile, maxRequests: 2, intervalMs: 0 } },
    });
    // One after the other: the order GitHub logged them in is the order they are asked for.
    const lost: string[] = [];
    for (let n = 0; n < 3; n++) lost.push(log.logged('issues', await labeledIssue()));
    const env = { ...home.env, SWITCHBOARD_URL: budgeted.url, SWITCHBOARD_TOKEN: adminToken };
    const pass = async () => {
      const result = await runCli(['deliveries', 'reconcile', '--json'], env);
      expect(result.code, result.stderr).toBe(0);
      await log.settled();
      return Object.fromEntries(
        parseJson(result)
          .reconcile.missing.filter((m: { guid: string }) => lost.includes(m.guid))
          .map((m: { guid: string; outcome: string }) => [m.guid, m.outcome]),
      );
    };
    // Oldest first: the first two are asked for, the third waits.
    expect(await pass()).toEqual({
      [lost[0]!]: 'requested',
      [lost[1]!]: 'requested',
      [lost[2]!]: 'deferred',
    });
    expect(await pass()).toEqual({ [lost[2]!]: 'requested' });
    for (const guid of lost) expect(log.requestsFor(guid)).toBe(1);
    await stop(budgeted);
  });

  test('a pass looks back --since, and never before the database was created', async () => {
    // The database is a day old now; GitHub still lists an event of two days ago (another
    // deployment's, before this one existed): never switchboard's to ask for.
    await server.sql`update schema_migrations set applied_at = now() - interval '1 day'`;
    const hour = 3_600_000;
    const beforeBirth = log.logged('issues', await labeledIssue(), {
      at: new Date(Date.now() - 48 * hour),
    });
    const hoursAgo = log.logged('issues', await labeledIssue(), {
      at: new Date(Date.now() - 3 * hour),
    });
    const minutesAgo = log.logged('issues', await labeledIssue(), {
      at: new Date(Date.now() - 10 * 60_000),
    });

    const ours = (report: { missing: { guid: string }[] }) =>
      report.missing
        .map((m) => m.guid)
        .filter((guid) => [beforeBirth, hoursAgo, minutesAgo].includes(guid));
    const recent = await reconcileByHand(['--since', '1h']);
    expect(ours(recent)).toEqual([minutesAgo]);
    expect(Date.parse(recent.since)).toBeGreaterThan(Date.now() - hour - 60_000);

    const all = await reconcileByHand();
    expect(ours(all)).toEqual([hoursAgo]);
    expect(Date.parse(all.since)).toBeLessThan(Date.now() - 23 * hour);
    expect(log.requestsFor(beforeBirth)).toBe(0);
    expect(log.requestsFor(hoursAgo)).toBe(1);
    expect(log.requestsFor(minutesAgo)).toBe(1);
  });

  test('--since must be a duration within GitHub’s three days (exit 2)', async () => {
    for (const [since, message] of [
      ['5', /"5" is not a duration: write it as 90m, 6h, 2d or 1d12h/],
      ['4d', /--since is from 1m to 3d \(GitHub keeps three days of deliveries\), not 4d/],
    ] as const) {
      const result = await runCli(['deliveries', 'reconcile', '--since', since], admin());
      expect(result).toMatchObject({ code: 2, stdout: '' });
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  test('only admins reconcile (exit 3)', async () => {
    const added = await server.api(adminToken, 'POST', '/humans', { name: 'reconcile-human' });
    const agent = await server.api(adminToken, 'POST', '/agents', {
      name: 'reconcile-agent',
      queues: ['issues'],
    });
    for (const [token, who] of [
      [added.body.token, 'a human who is not an admin'],
      [agent.body.token, 'an agent'],
    ]) {
      const result = await runCli(['deliveries', 'reconcile'], {
        ...home.env,
        SWITCHBOARD_URL: server.url,
        SWITCHBOARD_TOKEN: token,
      });
      expect(result, who).toMatchObject({ code: 3, stdout: '' });
      expect(result.stderr).toBe("only an admin may reconcile GitHub's delivery log\n");
    }
  });
});

describe('reconcile cannot run', () => {
  test('without App credentials it is off and says so (exit 3)', async () => {
    const plain = await startTestServer();
    try {
      const result = await runCli(['deliveries', 'reconcile'], {
        ...home.env,
        SWITCHBOARD_URL: plain.url,
        SWITCHBOARD_TOKEN: plain.adminToken,
      });
      expect(result).toMatchObject({ code: 3, stdout: '' });
      expect(result.stderr).toBe(
        "reconcile is off: this server has no GitHub App credentials (APP_ID, PRIVATE_KEY) to read GitHub's delivery log with\n",
      );
    } finally {
      await plain.stop();
    }
  });

  test('when GitHub refuses the App (another key), it says so and asks for nothing', async () => {
    const impostor = await startTestServer({ github: testAppCredentials(), githubTuning: TUNING });
    try {
      const before = log.redeliveryRequests.length;
      const result = await runCli(['deliveries', 'reconcile', '--json'], {
        ...home.env,
        SWITCHBOARD_URL: impostor.url,
        SWITCHBOARD_TOKEN: impostor.adminToken,
      });
      expect(result).toMatchObject({ code: 1, stdout: '' });
      expect(result.stderr).toBe(
        "the server failed: GitHub's delivery log could not be read: GitHub answered 401: A JSON web token could not be decoded - https://docs.github.com/rest\n",
      );
      expect(log.redeliveryRequests.length).toBe(before);
    } finally {
      await impostor.stop();
    }
  });
});
