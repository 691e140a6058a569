import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  hookDecision,
  permissionRequestHook,
  startHookEndpoint,
  type HookAnswer,
  type HookEndpoint,
} from '../support/claude-code/hook-endpoint.js';
import {
  resultText,
  say,
  startMockMessagesApi,
  toolResults,
  useTool,
  type MockMessagesApi,
} from '../support/claude-code/mock-messages-api.js';
import { startInteractive } from '../support/claude-code/interactive-session.js';
import {
  headlessClaude,
  type HeadlessClaude,
  type HeadlessOptions,
} from '../support/claude-code/run-headless.js';
import {
  allow,
  deny,
  standInPromptTool,
  type LogEntry,
  type PromptAnswer,
  type StandInPromptTool,
} from '../support/claude-code/stand-in-prompt-tool.js';

// What Claude Code 2.1.328 does with a permission-prompt tool and a PermissionRequest hook in
// `claude -p`, measured on the real binary: docs/claude-code-contract.md, fact by fact.
let mock: MockMessagesApi;
let claude: HeadlessClaude;
const stopping: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  [mock, claude] = await Promise.all([startMockMessagesApi(), headlessClaude()]);
});
afterEach(async () => {
  for (const part of stopping.splice(0)) await part.stop();
  await claude.clean();
});
afterAll(async () => {
  await mock?.stop();
  await claude?.remove();
});

const MARKER = { command: 'echo hi > marker', description: 'Write a marker' };

async function promptTool(
  transport: 'stdio' | 'http',
  answers: PromptAnswer[],
  options?: Parameters<typeof standInPromptTool>[2],
): Promise<StandInPromptTool> {
  const tool = await standInPromptTool(transport, answers, options);
  stopping.push(tool);
  return tool;
}

async function hookEndpoint(answers: HookAnswer[]): Promise<HookEndpoint> {
  const hook = await startHookEndpoint(answers);
  stopping.push(hook);
  return hook;
}

/** The model asks for Bash `input` once, then ends; `tool` (if any) is the prompt tool. */
async function askForBash(
  tool: StandInPromptTool | undefined,
  input: Record<string, unknown> = MARKER,
  options: Partial<HeadlessOptions> = {},
) {
  const conversation = await mock.script([useTool('Bash', input), say('Finished.')]);
  const run = await claude.run({
    ...{ mock, conversation },
    ...(tool && { mcpServers: { [tool.server]: tool.entry }, permissionPromptTool: tool.tool }),
    ...options,
  });
  const told = toolResults(conversation.requests[1])[0];
  return { run, conversation, told, toldText: resultText(told) };
}

const INVALID =
  'The permission prompt tool returned an invalid permission result. Expected ' +
  "{behavior: 'allow', updatedInput?: object} or {behavior: 'deny', message: string}.";

describe('the permission-prompt tool', () => {
  test.each(['stdio', 'http'] as const)(
    'over %s it is called with exactly {tool_name, input, tool_use_id}, and _meta carries a progressToken',
    async (transport) => {
      const tool = await promptTool(transport, [allow()]);
      const { run } = await askForBash(tool);

      expect(await tool.calls()).toEqual([
        {
          arguments: { tool_name: 'Bash', input: MARKER, tool_use_id: run.toolUses[0]!.id },
          meta: { progressToken: expect.any(Number), 'claudecode/toolUseId': run.toolUses[0]!.id },
        },
      ]);
    },
  );

  test('an allow without updatedInput, or with an empty one, runs the input unchanged', async () => {
    for (const answer of [{ behavior: 'allow' }, { behavior: 'allow', updatedInput: {} }]) {
      const { run, told } = await askForBash(await promptTool('stdio', [{ json: answer }]));
      expect(run.code, run.stderr).toBe(0);
      expect(claude.exists('marker'), JSON.stringify(answer)).toBe(true);
      expect(told).toMatchObject({ is_error: false });
      await claude.clean();
    }
  });

  test('an allow with a rewritten updatedInput runs the rewritten input instead', async () => {
    const rewritten = { command: 'echo hi > rewritten', description: 'Write another marker' };
    const tool = await promptTool('stdio', [
      { json: { behavior: 'allow', updatedInput: rewritten } },
    ]);
    await askForBash(tool);

    expect(claude.exists('rewritten')).toBe(true);
    expect(claude.exists('marker')).toBe(false);
  });

  test('a deny’s message is the tool result the model sees, as an error, and the run lists the denial', async () => {
    const { run, told } = await askForBash(await promptTool('stdio', [deny('Not on main.')]));

    expect(told).toMatchObject({ content: 'Not on main.', is_error: true });
    expect(run.result?.permission_denials).toEqual([
      { tool_name: 'Bash', tool_use_id: run.toolUses[0]!.id, tool_input: MARKER },
    ]);
    expect(claude.exists('marker')).toBe(false);
  });

  test('a deny with interrupt: true ends the run: exit 1, error_during_execution, no further model request', async () => {
    const tool = await promptTool('stdio', [
      { json: { behavior: 'deny', message: 'Stop.', interrupt: true } },
    ]);
    const { run, conversation } = await askForBash(tool);

    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ subtype: 'error_during_execution', is_error: true });
    expect(conversation.requests).toHaveLength(1);
    expect(claude.exists('marker')).toBe(false);
  });

  test('an isError result fails closed, even holding an allow: the model sees the text as a tool_use_error', async () => {
    const first = await askForBash(
      await promptTool('stdio', [
        { json: { behavior: 'allow', updatedInput: MARKER }, isError: true },
      ]),
    );
    const second = await askForBash(
      await promptTool('stdio', [{ text: 'approval service down', isError: true }]),
    );

    expect(claude.exists('marker')).toBe(false);
    expect(first.told).toMatchObject({ is_error: true });
    expect(first.toldText).toBe(
      `<tool_use_error>Error calling tool (Bash): ${JSON.stringify({ behavior: 'allow', updatedInput: MARKER })}</tool_use_error>`,
    );
    expect(second.toldText).toBe(
      '<tool_use_error>Error calling tool (Bash): approval service down</tool_use_error>',
    );
    // Not a permission denial: the call failed.
    expect(second.run.result?.permission_denials).toEqual([]);
  });

  test.each<[string, PromptAnswer]>([
    ['malformed JSON', { text: '{"behavior": "allow", ' }],
    ['a bare word', { text: 'allow' }],
    ['no text', { text: '' }],
    ['an unknown behavior', { json: { behavior: 'ask' } }],
    ['a deny without a message', { json: { behavior: 'deny' } }],
  ])(
    '%s fails closed: nothing runs, the model is told the result was invalid',
    async (_, answer) => {
      const { run, told, toldText } = await askForBash(await promptTool('stdio', [answer]));

      expect(claude.exists('marker')).toBe(false);
      expect(told).toMatchObject({ is_error: true });
      expect(toldText).toContain(INVALID);
      expect(run.result?.permission_denials).toHaveLength(1);
    },
  );

  test('MCP_TOOL_TIMEOUT caps the wait for it as for any MCP tool: past it, nothing runs', async () => {
    const tool = await promptTool('stdio', [{ ...allow(), afterMs: 8_000 }]);
    const { toldText } = await askForBash(tool, MARKER, { env: { MCP_TOOL_TIMEOUT: '3000' } });

    expect(toldText).toBe(
      '<tool_use_error>Error calling tool (Bash): MCP server "standin" tool "approval_prompt" timed out after 3s</tool_use_error>',
    );
    expect(claude.exists('marker')).toBe(false);
  });
});

describe('which tool uses ask the prompt tool in -p mode (default permission mode, no rules)', () => {
  // Paths are filled in per run: the project is the session's working directory.
  // Inputs are made per run: the project is the session's working directory.
  type Input = (project: string, home: string) => Record<string, unknown>;
  test.each<[string, string, boolean, Input]>([
    ['Read', 'a file in the project', false, (p) => ({ file_path: join(p, 'notes.txt') })],
    ['Read', 'a file outside it', true, (_, h) => ({ file_path: join(h, 'outside.txt') })],
    ['Bash', 'ls', false, () => ({ command: 'ls', description: 'List' })],
    ['Bash', 'cat notes.txt', false, () => ({ command: 'cat notes.txt', description: 'Show' })],
    ['Bash', 'echo hi', false, () => ({ command: 'echo hi', description: 'Echo' })],
    ['Bash', 'touch made', true, () => ({ command: 'touch made', description: 'Touch' })],
    ['Bash', 'echo hi > marker', true, () => MARKER],
    [
      'Write',
      'a new file in the project',
      true,
      (p) => ({ file_path: join(p, 'w'), content: 'w' }),
    ],
    [
      'Edit',
      'a file in the project',
      true,
      (p) => ({ file_path: join(p, 'notes.txt'), old_string: 'hello', new_string: 'bye' }),
    ],
    ['WebFetch', 'a URL', true, () => ({ url: 'https://example.com/', prompt: 'Sum up' })],
    ['mcp__standin__note', 'an MCP server', true, () => ({ line: 'x' })],
  ])('%s, of %s: asked, %s', async (name, _, asked, input) => {
    await writeFile(join(claude.project, 'notes.txt'), 'hello notes\n');
    await writeFile(join(claude.home.dir, 'outside.txt'), 'outside\n');
    const tool = await promptTool('stdio', [allow()]);
    const conversation = await mock.script([
      useTool(name, input(claude.project, claude.home.dir)),
      say('Finished.'),
    ]);
    const run = await claude.run({
      ...{ mock, conversation, mcpServers: { [tool.server]: tool.entry } },
      permissionPromptTool: tool.tool,
    });

    const calls = await tool.calls();
    expect(calls.map((call) => call.arguments.tool_name)).toEqual(asked ? [name] : []);
    // Asked or not, the use was allowed (WebFetch then fails offline, which is another matter).
    expect(run.result?.permission_denials).toEqual([]);
    expect(toolResults(conversation.requests[1])).toHaveLength(1);
  });

  test('Glob and Grep are not offered in a -p session: the model is told to use Bash', async () => {
    const conversation = await mock.script([useTool('Glob', { pattern: '*' }), say('Finished.')]);
    await claude.run({ mock, conversation });

    expect(resultText(toolResults(conversation.requests[1])[0])).toContain(
      'No such tool available: Glob',
    );
    const offered = (conversation.requests[0]!.body.tools as { name: string }[]).map((t) => t.name);
    expect(offered).toEqual(expect.arrayContaining(['Bash', 'Read', 'Edit', 'Write']));
    expect(offered).not.toContain('Glob');
    expect(offered).not.toContain('Grep');
  });
});

/** The stand-in's log from the call on, once `until` holds. */
async function logAfterCall(tool: StandInPromptTool, until: (log: LogEntry[]) => boolean) {
  let log: LogEntry[] = [];
  await expect.poll(async () => until((log = await tool.log()))).toBe(true);
  const call = log.findIndex((line) => line.kind === 'call');
  return log.slice(call + 1);
}

async function startWaiting(tool: StandInPromptTool) {
  const conversation = await mock.script([useTool('Bash', MARKER), say('Finished.')]);
  const started = await claude.start({
    ...{ mock, conversation, mcpServers: { [tool.server]: tool.entry } },
    permissionPromptTool: tool.tool,
  });
  await expect.poll(async () => (await tool.calls()).length).toBe(1);
  return started;
}

const methods = (log: LogEntry[]) =>
  log
    .filter((line) => line.kind === 'in')
    .map((line) => (line.message as { method?: string }).method);

describe('when claude -p goes away while the prompt tool waits', () => {
  test('SIGTERM, over stdio: the server is sent SIGINT, then SIGTERM; no notifications/cancelled', async () => {
    const tool = await promptTool('stdio', [{ ...allow(), afterMs: 20_000 }], {
      outliveSignals: true,
    });
    const { child, done } = await startWaiting(tool);
    child.kill('SIGTERM');
    const run = await done;

    const after = await logAfterCall(tool, (log) => log.some((l) => l.signal === 'SIGTERM'));
    expect(run.code).toBe(143);
    expect(after.filter((l) => l.kind === 'signal').map((l) => l.signal)).toEqual(
      expect.arrayContaining(['SIGINT', 'SIGTERM']),
    );
    expect(after.find((l) => l.kind === 'signal')?.signal).toBe('SIGINT');
    expect(methods(after)).not.toContain('notifications/cancelled');
    expect(claude.exists('marker')).toBe(false);
  });

  test('SIGINT, over stdio: the server is sent SIGINT and notifications/cancelled for the call', async () => {
    const tool = await promptTool('stdio', [{ ...allow(), afterMs: 20_000 }], {
      outliveSignals: true,
    });
    const { child, done } = await startWaiting(tool);
    child.kill('SIGINT');
    await done;

    const after = await logAfterCall(tool, (log) => log.some((l) => l.kind === 'aborted'));
    const [call] = (await tool.log()).filter((line) => line.kind === 'call');
    expect(after.find((l) => l.kind === 'signal')?.signal).toBe('SIGINT');
    expect(after).toContainEqual(
      expect.objectContaining({
        kind: 'in',
        message: {
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: call!.requestId, reason: 'AbortError: user-cancel' },
        },
      }),
    );
    expect(claude.exists('marker')).toBe(false);
  });

  test('SIGKILL, over stdio: the server’s stdin ends, and it is left running', async () => {
    const tool = await promptTool('stdio', [{ ...allow(), afterMs: 20_000 }]);
    const { child, done } = await startWaiting(tool);
    child.kill('SIGKILL');
    await done;

    const after = await logAfterCall(tool, (log) => log.some((l) => l.kind === 'stdin-end'));
    expect(after.filter((l) => l.kind === 'signal')).toEqual([]);
    const pid = (await tool.log()).find((line) => line.kind === 'started')!.pid as number;
    expect(() => process.kill(pid, 0)).not.toThrow(); // tool.stop() ends it
  });

  test.each(['SIGTERM', 'SIGINT'] as const)(
    '%s, over HTTP: the call’s response stream is closed unanswered; no notifications/cancelled',
    async (signal) => {
      const tool = await promptTool('http', [{ ...allow(), afterMs: 20_000 }]);
      const { child, done } = await startWaiting(tool);
      child.kill(signal);
      await done;

      const after = await logAfterCall(tool, (log) =>
        log.some((l) => l.kind === 'http-closed' && l.method === 'POST' && !l.finished),
      );
      expect(after).toContainEqual(
        expect.objectContaining({ kind: 'http-closed', method: 'POST', finished: false }),
      );
      expect(methods(after)).not.toContain('notifications/cancelled');
      expect(after.filter((l) => l.kind === 'http' && l.method === 'DELETE')).toEqual([]);
    },
  );
});

describe('the PermissionRequest hook (type http) in -p mode', () => {
  const HOOK_TOKEN = 'hook-token-from-the-environment';
  const withHeaders = {
    headers: { Authorization: 'Bearer $HOOK_TOKEN', 'X-Unlisted': 'a${UNLISTED}b' },
    allowedEnvVars: ['HOOK_TOKEN'],
  };

  test('fires with no prompt tool; its request: POST, JSON, headers from listed variables only, and these fields', async () => {
    const hook = await hookEndpoint([hookDecision({ behavior: 'allow' })]);
    const { run, conversation } = await askForBash(undefined, MARKER, {
      settings: permissionRequestHook(hook.url, withHeaders),
      env: { HOOK_TOKEN, UNLISTED: 'unlisted-value' },
    });

    expect(claude.exists('marker')).toBe(true);
    expect(hook.requests).toHaveLength(1);
    const [request] = hook.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/hooks/permission-request' });
    expect(request!.headers).toMatchObject({
      'content-type': 'application/json',
      authorization: `Bearer ${HOOK_TOKEN}`,
      'x-unlisted': 'ab',
    });
    expect(request!.body).toEqual({
      session_id: conversation.sessionId,
      transcript_path: expect.stringMatching(
        new RegExp(`^${claude.home.dir}/\\.claude/projects/.+/${conversation.sessionId}\\.jsonl$`),
      ),
      cwd: claude.project,
      prompt_id: expect.any(String),
      permission_mode: 'default',
      effort: { level: expect.any(String) },
      hook_event_name: 'PermissionRequest',
      tool_name: 'Bash',
      tool_input: MARKER,
      permission_suggestions: [
        { type: 'addDirectories', directories: [claude.project], destination: 'session' },
      ],
    });
    expect(run.code).toBe(0);
  });

  test('allow with updatedInput runs the rewritten input', async () => {
    const rewritten = { command: 'echo hi > rewritten', description: 'Another marker' };
    const hook = await hookEndpoint([hookDecision({ behavior: 'allow', updatedInput: rewritten })]);
    await askForBash(undefined, MARKER, { settings: permissionRequestHook(hook.url) });

    expect(claude.exists('rewritten')).toBe(true);
    expect(claude.exists('marker')).toBe(false);
  });

  test('deny: its message is the tool result; without one the model reads “Permission denied by hook”', async () => {
    const hook = await hookEndpoint([
      hookDecision({ behavior: 'deny', message: 'Not today.' }),
      hookDecision({ behavior: 'deny' }),
    ]);
    const settings = permissionRequestHook(hook.url);
    const first = await askForBash(undefined, MARKER, { settings });
    const second = await askForBash(undefined, MARKER, { settings });

    expect(first.told).toMatchObject({ content: 'Not today.', is_error: true });
    expect(second.toldText).toBe('Permission denied by hook');
    expect(claude.exists('marker')).toBe(false);
  });

  test('deny with interrupt: true ends the run (exit 1, no further model request)', async () => {
    const hook = await hookEndpoint([
      hookDecision({ behavior: 'deny', message: 'Stop.', interrupt: true }),
    ]);
    const { run, conversation } = await askForBash(undefined, MARKER, {
      settings: permissionRequestHook(hook.url),
    });

    expect(run.code).toBe(1);
    expect(conversation.requests).toHaveLength(1);
  });

  test.each<[string, HookAnswer]>([
    ['an empty 200', {}],
    ['a 500, even with an allow body', { ...hookDecision({ behavior: 'allow' }), status: 500 }],
    ['a plain-text 200', { text: 'allow' }],
    ['an unknown behavior', hookDecision({ behavior: 'maybe' })],
    [
      'another event’s name',
      {
        json: {
          hookSpecificOutput: { hookEventName: 'PreToolUse', decision: { behavior: 'allow' } },
        },
      },
    ],
  ])(
    '%s decides nothing: with no prompt tool, the use is denied as if no hook ran',
    async (_, answer) => {
      const hook = await hookEndpoint([answer]);
      const { toldText } = await askForBash(undefined, MARKER, {
        settings: permissionRequestHook(hook.url),
      });

      expect(hook.requests).toHaveLength(1);
      expect(claude.exists('marker')).toBe(false);
      expect(toldText).toMatch(/^Output redirection to .* needs approval\./);
    },
  );

  test('past its timeout (seconds) the request is abandoned and decides nothing', async () => {
    const hook = await hookEndpoint([{ ...hookDecision({ behavior: 'allow' }), afterMs: 6_000 }]);
    const { toldText } = await askForBash(undefined, MARKER, {
      settings: permissionRequestHook(hook.url, { timeout: 2 }),
    });

    expect(hook.requests[0]!.abandoned).toBe(true);
    expect(claude.exists('marker')).toBe(false);
    expect(toldText).toMatch(/needs approval/);
  });

  test('with a prompt tool too, both are asked at once: the first answer wins, the hook’s here; the tool is sent notifications/cancelled', async () => {
    const tool = await promptTool('stdio', [{ ...allow(), afterMs: 10_000 }]);
    // The hook answers only once the tool has been called: both wait at the same time.
    const hook = await hookEndpoint([
      {
        ...hookDecision({ behavior: 'deny', message: 'Hook: no.' }),
        until: () => expect.poll(async () => (await tool.calls()).length).toBe(1),
      },
    ]);
    const { toldText } = await askForBash(tool, MARKER, {
      settings: permissionRequestHook(hook.url),
    });

    expect(toldText).toBe('Hook: no.');
    expect(claude.exists('marker')).toBe(false);
    const log = await tool.log();
    expect(methods(log)).toContain('notifications/cancelled');
    expect(log.map((line) => line.kind)).toContain('aborted');
  });

  test('with a prompt tool too, the tool’s quicker answer wins and the hook’s request is abandoned', async () => {
    const hook = await hookEndpoint([
      { ...hookDecision({ behavior: 'deny', message: 'Hook: no.' }), afterMs: 5_000 },
    ]);
    const tool = await promptTool('stdio', [allow()]);
    await askForBash(tool, MARKER, { settings: permissionRequestHook(hook.url) });

    expect(claude.exists('marker')).toBe(true);
    await expect.poll(() => hook.requests[0]?.abandoned).toBe(true);
  });

  test('with a prompt tool too, a hook that decides nothing leaves the decision to the tool', async () => {
    const hook = await hookEndpoint([{}]);
    const tool = await promptTool('stdio', [deny('Tool: no.')]);
    const { toldText } = await askForBash(tool, MARKER, {
      settings: permissionRequestHook(hook.url),
    });

    expect(hook.requests).toHaveLength(1);
    expect(toldText).toBe('Tool: no.');
  });
});

describe('the PermissionRequest hook in an interactive session (driven through tmux)', () => {
  const interactive = async (hook: HookEndpoint, args = ['--permission-mode', 'manual']) => {
    const conversation = await mock.script([useTool('Bash', MARKER), say('Finished.')]);
    const session = await startInteractive(claude, {
      ...{ mock, conversation, settings: permissionRequestHook(hook.url) },
      args,
    });
    stopping.push(session);
    await session.waitFor(/^❯/m);
    await session.type('Write a marker.');
    await session.press('Enter');
    return { conversation, session };
  };

  test('the hook is asked as the dialog opens; answered in the terminal first, the hook’s request stays open and its later answer is ignored', async () => {
    let answeredInTerminal = () => {};
    const terminal = new Promise<void>((resolve) => (answeredInTerminal = resolve));
    const hook = await hookEndpoint([
      { ...hookDecision({ behavior: 'deny', message: 'Hook: no.' }), until: () => terminal },
    ]);
    const { conversation, session } = await interactive(hook);

    await session.waitFor(/Do you want to proceed\?/);
    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0]!.body).toMatchObject({
      permission_mode: 'default',
      tool_input: MARKER,
    });
    // 1. Yes (the dialog takes keys a moment after it opens)
    await expect
      .poll(async () => (await session.press('Enter'), claude.exists('marker')), { interval: 500 })
      .toBe(true);
    expect(hook.requests[0]!.abandoned).toBe(false);
    answeredInTerminal();
    await expect.poll(() => conversation.requests.length).toBe(2);
    expect(resultText(toolResults(conversation.requests[1])[0])).toBe(
      '(Bash completed with no output)',
    );
    // Claude Code waited for the hook's answer rather than hanging up: nothing tells it "too late".
    await expect.poll(() => hook.requests[0]!.answered).toBe(true);
    expect(hook.requests[0]!.abandoned).toBe(false);
  });

  test('the hook answering first closes the dialog: its deny is the tool result', async () => {
    const hook = await hookEndpoint([
      { ...hookDecision({ behavior: 'deny', message: 'Hook: no.' }), afterMs: 1_000 },
    ]);
    const { conversation, session } = await interactive(hook);

    await expect.poll(() => conversation.requests.length).toBe(2);
    expect(toolResults(conversation.requests[1])[0]).toMatchObject({
      content: 'Hook: no.',
      is_error: true,
    });
    expect(await session.waitFor(/Denied by PermissionRequest hook/)).not.toMatch(
      /Do you want to proceed\?/,
    );
    expect(claude.exists('marker')).toBe(false);
  });

  test('with no --permission-mode the session is in auto mode: the command runs, nobody is asked', async () => {
    const hook = await hookEndpoint([hookDecision({ behavior: 'deny', message: 'Hook: no.' })]);
    const { conversation, session } = await interactive(hook, []);

    await expect.poll(() => conversation.requests.length).toBe(2);
    expect(claude.exists('marker')).toBe(true);
    expect(hook.requests).toEqual([]);
    expect(await session.screen()).toMatch(/auto mode on/);
  });
});
