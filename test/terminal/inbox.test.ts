import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  createCliHome,
  parseJson,
  runCli,
  startCli,
  type CliHome,
} from '../cli/support/run-cli.js';
import { requireTool } from '../support/require-tool.js';
import { hasTmux, startInTmux, type TmuxSession } from '../cli/support/tmux.js';

requireTool('tmux', await hasTmux(), 'apt-get install -y tmux');

let server: TestServer;
let home: CliHome;
/** A human (not the admin) with an agent of their own: its questions come to them. */
let human: Record<string, string>;
let agentToken: string;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  const added = await server.api(server.adminToken, 'POST', '/humans', { name: 'ines' });
  human = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: added.body.token };
  const agent = await server.api(added.body.token, 'POST', '/agents', {
    name: 'ines-bot',
    queues: ['builds'],
  });
  agentToken = agent.body.token;
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

const ask = async (question: string, body?: string) =>
  (await server.api(agentToken, 'POST', '/approvals', { question, body })).body.todo as {
    id: number;
  };
const assign = async (title: string) =>
  (
    await server.api(server.adminToken, 'POST', '/todos', {
      queue: 'builds',
      title,
      assignee: 'ines',
    })
  ).body.todo as { id: number };

/**
 * Moves the inbox's cursor (❯) onto todo `id`, one key at a time — j and k, and the arrows, in
 * turn — waiting for each move to show before the next.
 */
async function select(tmux: TmuxSession, id: number): Promise<void> {
  for (let moves = 0; moves < 20; moves++) {
    const screen = await tmux.screen();
    const lines = screen.split('\n');
    const cursor = lines.findIndex((line) => line.startsWith('❯ '));
    const target = lines.findIndex((line) => /^[❯ ] #(\d+) /.exec(line)?.[1] === String(id));
    if (target === -1) throw new Error(`#${id} is not listed:\n${screen}`);
    if (cursor === target) return;
    const up = target < cursor;
    await tmux.send([moves % 2 ? (up ? 'Up' : 'Down') : up ? 'k' : 'j']);
    await tmux.waitFor((now) => now !== screen);
  }
  throw new Error(`could not move onto #${id}:\n${await tmux.screen()}`);
}

describe.sequential('inbox', () => {
  test('not a terminal: one plain line per item, approvals first; --json', async () => {
    const todo = await assign('Look at build 77');
    const approval = await ask('May I restart the runner?');
    const result = await runCli(['inbox'], human);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      new RegExp(
        `^#${approval.id} approval from ines-bot, expires in 1[45]m — May I restart the runner\\?$`,
      ),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(`^#${todo.id} pending on builds, \\d+s old — Look at build 77$`),
      ),
    );
    const json = parseJson(await runCli(['inbox', '--json'], human));
    expect(json.todos.map((t: { id: number }) => t.id).slice(0, 1)).toEqual([approval.id]);
    expect(json.todos.map((t: { id: number }) => t.id)).toContain(todo.id);
    // --watch and --json do not go together.
    expect((await runCli(['inbox', '--watch', '--json'], human)).code).toBe(2);
  });

  test('not a terminal, --watch: prints each new item as it arrives, stops on SIGINT with 0', async () => {
    const watching = startCli(['inbox', '--watch'], human);
    await watching.waitFor(/approval from ines-bot/);
    const fresh = await ask('May I tag v2?');
    await watching.waitFor(`#${fresh.id} approval from ines-bot`);
    const assigned = await assign('Bisect the flake');
    await watching.waitFor(`#${assigned.id} pending on builds`);
    watching.child.kill('SIGINT');
    const result = await watching.done;
    expect(result.code).toBe(0);
    // Each item once.
    expect(
      result.stdout.split('\n').filter((line) => line.startsWith(`#${fresh.id} `)),
    ).toHaveLength(1);
  });

  test('in a terminal: move with j/k and arrows, deny with a note, live as approvals arrive', async () => {
    // The full input preview of a permission prompt, as the channel relays it.
    const preview = '{\n  "command": "terraform apply -auto-approve",\n  "cwd": "/srv/infra"\n}';
    const first = await ask('Claude Code wants to use Bash: apply the plan', preview);
    const tmux = await startInTmux(['inbox', '--watch'], { ...human, HOME: home.dir });
    try {
      let screen = await tmux.waitFor('· live');
      expect(screen).toMatch(/^switchboard inbox — \d+ waiting for ines · live$/m);
      await select(tmux, first.id);
      screen = await tmux.waitFor('"cwd": "/srv/infra"');
      expect(screen).toContain(`#${first.id} approval asked by ines-bot · expires at `);
      expect(screen).toContain('    "command": "terraform apply -auto-approve",');

      // Live: a new approval shows up without a key pressed.
      const second = await ask('May I rotate the keys?');
      await tmux.waitFor(`#${second.id} approval from ines-bot`);

      await select(tmux, second.id);
      await select(tmux, first.id);
      await tmux.send(['d']);
      await tmux.waitFor(`deny #${first.id} — note (optional; Enter sends, Esc cancels):`);
      await tmux.send(['not on a Friday'], { literal: true });
      await tmux.waitFor('Esc cancels): not on a Friday');
      await tmux.send(['Enter']);
      await tmux.waitFor(`#${first.id} denied (note: not on a Friday)`);
      const { body } = await server.api(server.adminToken, 'GET', `/todos/${first.id}`);
      expect(body.todo).toMatchObject({
        verdict: 'deny',
        decided_by: 'ines',
        summary: 'not on a Friday',
      });
      // Decided, it leaves the inbox.
      screen = await tmux.waitFor(new RegExp(`^❯ #(?!${first.id} )`, 'm'));
      expect(screen).not.toContain(`#${first.id} approval`);

      // a on something that is not an approval says so; q leaves with 0.
      const { id: plain } = await assign('Not an approval');
      await tmux.waitFor(`#${plain} pending on builds`);
      await select(tmux, plain);
      await tmux.send(['a']);
      await tmux.waitFor(`#${plain} is not an approval waiting for a verdict`);
      await tmux.send(['q']);
      screen = await tmux.waitFor('exited 0');
      // The inbox cleared itself away.
      expect(screen).not.toContain('switchboard inbox —');
    } finally {
      await tmux.close();
    }
  });

  test('regression: inbox --watch showed a verdict given elsewhere late, or only when something else rang', async () => {
    const approval = await ask('May I clear the cache?');
    const { id: todo } = await assign('Triage the flaky test');
    const tmux = await startInTmux(['inbox', '--watch'], { ...human, HOME: home.dir });
    try {
      await tmux.waitFor(`#${todo} pending on builds`);
      await tmux.waitFor(`#${approval.id} approval from ines-bot`);
      // Decided elsewhere (the console, another terminal): nothing rings ines for it, yet the
      // inbox drops it without a key pressed.
      const decided = await server.api(
        human.SWITCHBOARD_TOKEN!,
        'POST',
        `/todos/${approval.id}/approve`,
        {},
      );
      expect(decided.status).toBe(200);
      await tmux.waitFor((screen) => !screen.includes(`#${approval.id} approval`));
      // Claimed elsewhere (by a worker of hers): shown as claimed, again without a key.
      const claimed = await server.api(
        human.SWITCHBOARD_TOKEN!,
        'POST',
        `/todos/${todo}/claim`,
        {},
      );
      expect(claimed.status).toBe(200);
      await tmux.waitFor(`#${todo} claimed by ines on builds`);
      await tmux.send(['q']);
      await tmux.waitFor('exited 0');
    } finally {
      await tmux.close();
    }
  });

  test('regression: the inbox offered "a allow · d deny" on items that are not approvals', async () => {
    const approval = await ask('May I bump the lockfile?');
    const { id: todo } = await assign('Read the release notes');
    const tmux = await startInTmux(['inbox'], { ...human, HOME: home.dir });
    try {
      await tmux.waitFor(`#${todo} pending on builds`);
      await select(tmux, todo);
      let screen = await tmux.waitFor(`#${todo} manual on builds`);
      expect(screen).toMatch(/^↑↓ or j\/k move · r refresh · q quit$/m);
      expect(screen).not.toContain('allow');
      await select(tmux, approval.id);
      screen = await tmux.waitFor(`#${approval.id} approval asked by ines-bot`);
      expect(screen).toMatch(/^↑↓ or j\/k move · a allow · d deny · r refresh · q quit$/m);
      await tmux.send(['q']);
      await tmux.waitFor('exited 0');
    } finally {
      await tmux.close();
    }
    // Leave the inbox as it was for whoever looks next.
    await server.api(human.SWITCHBOARD_TOKEN!, 'POST', `/todos/${approval.id}/deny`, {});
  });
});
