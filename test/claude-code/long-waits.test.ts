import { afterAll, beforeAll, describe, test } from 'vitest';
import {
  hookDecision,
  permissionRequestHook,
  startHookEndpoint,
} from '../support/claude-code/hook-endpoint.js';
import {
  resultText,
  say,
  startMockMessagesApi,
  toolResults,
  useTool,
  type MockMessagesApi,
} from '../support/claude-code/mock-messages-api.js';
import { headlessClaude, type HeadlessOptions } from '../support/claude-code/run-headless.js';
import {
  allow,
  standInPromptTool,
  type PromptAnswer,
} from '../support/claude-code/stand-in-prompt-tool.js';

// LONG: how long `claude -p` waits for a permission decision, measured on the real binary
// (docs/claude-code-contract.md, "Timeouts"). Each test waits 60–75 s; they run at the same
// time, so the file takes about 80 s. Each has a session, a project and a stand-in of its own.
let mock: MockMessagesApi;

beforeAll(async () => {
  mock = await startMockMessagesApi();
});
afterAll(async () => {
  await mock?.stop();
});

const LONG = 150_000;
const MARKER = { command: 'echo hi > marker', description: 'Write a marker' };
const AFTER_75_S: PromptAnswer = { ...allow(), afterMs: 75_000 };

/** Asks for Bash once in a session of its own; `decide` adds the prompt tool or the hook. */
async function askForBash(decide: Partial<HeadlessOptions>) {
  const claude = await headlessClaude();
  try {
    const conversation = await mock.script([useTool('Bash', MARKER), say('Finished.')]);
    const run = await claude.run({ mock, conversation, timeoutMs: LONG - 10_000, ...decide });
    const told = resultText(toolResults(conversation.requests[1])[0]);
    return { run, told, ran: claude.exists('marker') };
  } finally {
    await claude.remove();
  }
}

async function withPromptTool(
  transport: 'stdio' | 'http',
  answer: PromptAnswer,
  options?: { jsonResponse?: boolean },
) {
  const tool = await standInPromptTool(transport, [answer], options);
  try {
    const asked = await askForBash({
      mcpServers: { [tool.server]: tool.entry },
      permissionPromptTool: tool.tool,
    });
    return { ...asked, log: await tool.log() };
  } finally {
    await tool.stop();
  }
}

describe.concurrent('LONG: waiting for a decision', () => {
  test(
    'over HTTP answered in plain JSON (no stream), an answer after 75 s is too late: the call is given up at 60 s',
    async ({ expect }) => {
      const { ran, told, log } = await withPromptTool('http', AFTER_75_S, { jsonResponse: true });

      expect(ran).toBe(false);
      expect(told).toBe(
        '<tool_use_error>Error calling tool (Bash): The operation timed out.</tool_use_error>',
      );
      // Claude Code hung up the call's POST; the stand-in's answer came too late for anyone.
      const call = log.find((line) => line.kind === 'call')!;
      const hungUp = log.find(
        (l) => l.kind === 'http-closed' && l.method === 'POST' && !l.finished,
      );
      expect(hungUp!.at - call.at).toBeGreaterThanOrEqual(59_000);
      expect(hungUp!.at - call.at).toBeLessThan(75_000);
    },
    LONG,
  );

  test(
    'over HTTP on an SSE stream with notifications/progress every 10 s, an answer after 75 s is taken',
    async ({ expect }) => {
      const { ran, told, log } = await withPromptTool('http', {
        ...AFTER_75_S,
        progressEveryMs: 10_000,
      });

      expect(ran).toBe(true);
      expect(told).toBe('(Bash completed with no output)');
      expect(log.filter((line) => line.kind === 'progress-sent').length).toBeGreaterThanOrEqual(6);
    },
    LONG,
  );

  test(
    'over HTTP on an SSE stream whose headers came at once, a silent answer after 75 s is taken too',
    async ({ expect }) => {
      const { ran, log } = await withPromptTool('http', AFTER_75_S);

      expect(ran).toBe(true);
      expect(log.filter((line) => line.kind === 'progress-sent')).toEqual([]);
    },
    LONG,
  );

  test(
    'over stdio, a silent answer after 75 s is taken',
    async ({ expect }) => {
      const { ran, told } = await withPromptTool('stdio', AFTER_75_S);

      expect(ran).toBe(true);
      expect(told).toBe('(Bash completed with no output)');
    },
    LONG,
  );

  test(
    'a PermissionRequest http hook with no timeout set: an answer after 75 s is taken',
    async ({ expect }) => {
      const hook = await startHookEndpoint([
        { ...hookDecision({ behavior: 'allow' }), afterMs: 75_000 },
      ]);
      try {
        const { ran } = await askForBash({ settings: permissionRequestHook(hook.url) });

        expect(ran).toBe(true);
        expect(hook.requests).toEqual([expect.objectContaining({ abandoned: false })]);
      } finally {
        await hook.stop();
      }
    },
    LONG,
  );
});
