import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiClient } from '../../src/client/api-client.js';
import { openWakeStream } from '../../src/client/open-wake-stream.js';
import { waitForVerdict } from '../../src/client/wait-for-verdict.js';
import { startRoundRobinProxy } from '../support/start-round-robin-proxy.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, runCli, startCli, type CliHome } from './support/run-cli.js';

let server: TestServer;
let home: CliHome;
/** An agent owned by the admin: its questions go to the admin. */
let agent: Record<string, string>;
let agentToken: string;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer({ sweepIntervalMs: 200 }), createCliHome()]);
  const added = await server.api(server.adminToken, 'POST', '/agents', {
    name: 'asker',
    queues: ['deploys'],
  });
  agentToken = added.body.token;
  agent = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: agentToken };
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

const decide = (id: number, verb: 'approve' | 'deny' | 'cancel', body: object = {}) =>
  server.api(server.adminToken, 'POST', `/todos/${id}/${verb}`, body);

/** Starts `approval request QUESTION … --wait`, and returns it with its approval's id once asked. */
async function asking(args: string[], env = agent) {
  const running = startCli(['approval', 'request', ...args], env);
  for (const started = Date.now(); Date.now() - started < 20_000;) {
    const [row] = await server.sql`select id from todos where title = ${args[0]!}`;
    if (row) return { running, id: Number(row.id) };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no approval asked: ${running.stdout}`);
}

describe.concurrent('approval request', () => {
  test('without --wait: asks the owner, prints the approval, exits 0', async () => {
    const human = await runCli(['approval', 'request', 'Rotate the keys?', '--ttl', '60'], agent);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toMatch(
      /^asked #\d+ pending on approvals — Rotate the keys\? \(asker asks, expires at \S+Z\)\n$/,
    );
    const { todo } = parseJson(
      await runCli(
        ['approval', 'request', 'Ship it?', '--body', 'all green', '--about', '1', '--json'],
        { ...agent, SWITCHBOARD_TOKEN: server.adminToken },
      ),
    );
    // A human asking asks themself.
    expect(todo).toMatchObject({ kind: 'approval', title: 'Ship it?', body: 'all green' });
    expect(todo.assignee).toBe(todo.requested_by);
    expect(todo.about_todo_id).toBe(1);
  });

  test('--wait: allowed while it waits, exit 0 with the verdict', async () => {
    const { running, id } = await asking(['Deploy build 4711?', '--wait', '60']);
    await running.waitFor(`asked #${id} — waiting for `);
    await decide(id, 'approve', { note: 'go' });
    const result = await running.done;
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(
      new RegExp(`#${id} allowed by \\S+ — Deploy build 4711\\? \\(note: go\\)\\n$`),
    );
  });

  test('--wait: denied is exit 3, the note on stderr; --json still prints the approval', async () => {
    const { running, id } = await asking(['Drop the table?', '--wait', '60', '--json']);
    await decide(id, 'deny', { note: 'not today' });
    const result = await running.done;
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(
      new RegExp(`^#${id} denied by \\S+ — Drop the table\\? \\(note: not today\\)\\n$`),
    );
    expect(parseJson(result).todo).toMatchObject({ id, verdict: 'deny', summary: 'not today' });
  });

  test('--wait: canceled is exit 3 with why', async () => {
    const { running, id } = await asking(['Reboot?', '--wait', '60']);
    // A cancel rings nothing: the wait sees it on its next read (here: its expiry, or the poll).
    await decide(id, 'cancel', { reason: 'asked twice' });
    await decide(
      (await server.api(agentToken, 'POST', '/approvals', { question: 'nudge' })).body.todo.id,
      'approve',
    );
    const result = await running.done;
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(`#${id} was canceled: asked twice\n`);
  });

  test('--wait: no verdict in time is exit 5; so is an approval that expires first', async () => {
    const quiet = await runCli(['approval', 'request', 'Anyone?', '--wait', '1', '--keep'], agent);
    expect(quiet.code).toBe(5);
    expect(quiet.stderr).toMatch(/^no verdict on #\d+ within 1 s — it stays open until \S+Z\n$/);

    const expiring = await runCli(
      ['approval', 'request', 'Quick?', '--ttl', '1', '--wait', '30', '--json'],
      agent,
    );
    expect(expiring.code).toBe(5);
    expect(expiring.stderr).toMatch(/^#\d+ expired without a verdict\n$/);
    expect(parseJson(expiring).todo.verdict).toBeNull();
  });
});

test('a verdict recorded before the stream listens is found once it is ready', async () => {
  const client = createApiClient({ url: server.url, token: agentToken });
  const { todo } = await client.requestApproval({ question: 'Decided before anyone listens?' });
  await decide(todo.id, 'approve');
  // The stream opens after the verdict: no wake will ever come for it.
  const wakes = openWakeStream({ url: server.url, token: agentToken }, 'approvals');
  try {
    const started = Date.now();
    const outcome = await waitForVerdict(client, wakes, todo.id, Date.now() + 30_000);
    expect(outcome).toMatchObject({ outcome: 'decided', todo: { verdict: 'allow' } });
    expect(Date.now() - started).toBeLessThan(10_000);
  } finally {
    wakes.close();
  }
});

describe.concurrent(
  'regression: approval request --wait that timed out left the approval open',
  () => {
    test('on timeout it is canceled, "nobody is waiting any more": by an agent and by a human', async () => {
      const human = { ...agent, SWITCHBOARD_TOKEN: server.adminToken };
      for (const [who, env] of [
        ['agent', agent],
        ['human', human],
      ] as const) {
        const question = `Anyone there, ${who}?`;
        const result = await runCli(
          ['approval', 'request', question, '--wait', '1', '--json'],
          env,
        );
        expect(result.code).toBe(5);
        const { todo } = parseJson(result);
        expect(result.stderr).toBe(
          `no verdict on #${todo.id} within 1 s — canceled it (nobody is waiting any more; --keep leaves it open)\n`,
        );
        expect(todo).toMatchObject({
          state: 'canceled',
          summary: 'nobody is waiting any more',
          verdict: null,
        });
        // Nobody can allow it any more.
        const late = await decide(todo.id, 'approve');
        expect(late.status).toBe(409);
        const [event] = await server.sql`
        select actor, action, data from todo_events where todo_id = ${todo.id} order by id desc limit 1`;
        // Canceled by whoever asked.
        expect(event).toEqual({
          actor: todo.requested_by,
          action: 'canceled',
          data: { reason: 'nobody is waiting any more' },
        });
      }
    });

    test('regression: Ctrl-C during --wait left the approval open; it is withdrawn, exit 130', async () => {
      const { running, id } = await asking(['Interrupted?', '--wait', '60']);
      await running.waitFor(`asked #${id} — waiting for`);
      running.child.kill('SIGINT');
      const result = await running.done;
      expect(result.code).toBe(130);
      expect(result.stderr).toBe(
        `stopped waiting for a verdict on #${id} (Ctrl-C) — canceled it (nobody is waiting any more; --keep leaves it open)\n`,
      );
      const [withdrawn] = await server.sql`select state, summary from todos where id = ${id}`;
      expect(withdrawn).toEqual({ state: 'canceled', summary: 'nobody is waiting any more' });

      // --keep leaves it open; SIGTERM (a supervisor stopping it) is 143.
      const kept = await asking(['Interrupted, kept?', '--wait', '60', '--keep']);
      await kept.running.waitFor(`asked #${kept.id} — waiting for`);
      kept.running.child.kill('SIGTERM');
      const keptResult = await kept.running.done;
      expect(keptResult.code).toBe(143);
      expect(keptResult.stderr).toMatch(
        new RegExp(
          `^stopped waiting for a verdict on #${kept.id} \\(SIGTERM\\) — it stays open until \\S+Z\\n$`,
        ),
      );
      const [row] = await server.sql`select state from todos where id = ${kept.id}`;
      expect(row).toEqual({ state: 'pending' });
    });

    test('regression: Ctrl-C while the question was being asked killed the command and left the approval open', async () => {
      // The question is held on its way to the server until the command has been interrupted.
      let arrived!: () => void;
      let release!: () => void;
      const asking = new Promise<void>((resolve) => (arrived = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      const proxy = await startRoundRobinProxy([Number(new URL(server.url).port)], {
        hold: (req) => {
          if (req.method !== 'POST' || !req.url?.endsWith('/approvals')) return;
          arrived();
          return released;
        },
      });
      try {
        const question = 'Interrupted while asking?';
        const running = startCli(['approval', 'request', question, '--wait', '60'], {
          ...agent,
          SWITCHBOARD_URL: proxy.url,
        });
        await asking;
        running.child.kill('SIGINT');
        release();
        const result = await running.done;
        expect(result.code).toBe(130);
        const [asked] = await server.sql`
          select id, state, summary from todos where title = ${question}`;
        expect(asked).toMatchObject({ state: 'canceled', summary: 'nobody is waiting any more' });
        expect(result.stderr).toBe(
          `stopped waiting for a verdict on #${asked!.id} (Ctrl-C) — canceled it (nobody is waiting any more; --keep leaves it open)\n`,
        );
      } finally {
        await proxy.close();
      }
    });

    test('--keep leaves it open until it expires, to be decided and read later', async () => {
      const result = await runCli(
        ['approval', 'request', 'Keep this one?', '--wait', '1', '--keep', '--json'],
        agent,
      );
      expect(result.code).toBe(5);
      const { todo } = parseJson(result);
      expect(todo).toMatchObject({ state: 'pending', verdict: null });
      expect((await decide(todo.id, 'approve')).status).toBe(200);

      const alone = await runCli(['approval', 'request', 'Keep?', '--keep'], agent);
      expect(alone).toMatchObject({ code: 2, stdout: '' });
      expect(alone.stderr).toMatch(/^--keep needs --wait too — /);
    });

    test("an agent may withdraw an approval it asked for, not another's question nor a todo", async () => {
      const other = await server.api(server.adminToken, 'POST', '/agents', {
        name: 'other-asker',
        queues: ['deploys'],
      });
      const theirs = (
        await server.api(other.body.token, 'POST', '/approvals', { question: 'Mine to withdraw?' })
      ).body.todo;
      const withdraw = (token: string, id: number) =>
        server.api(token, 'POST', `/todos/${id}/cancel`, { reason: 'changed my mind' });

      expect((await withdraw(agentToken, theirs.id)).status).toBe(404);
      const own = await withdraw(other.body.token, theirs.id);
      expect(own.status).toBe(200);
      expect(own.body.todo).toMatchObject({ state: 'canceled', summary: 'changed my mind' });

      const todo = (
        await server.api(server.adminToken, 'POST', '/todos', { queue: 'deploys', title: 'ship' })
      ).body.todo;
      const refused = await withdraw(agentToken, todo.id);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe(
        'only a human may cancel a todo (an agent may withdraw an approval it asked for)',
      );
    });
  },
);
