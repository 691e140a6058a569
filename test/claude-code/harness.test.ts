import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  resultText,
  say,
  startMockMessagesApi,
  toolResults,
  useTool,
  type MockMessagesApi,
} from '../support/claude-code/mock-messages-api.js';
import { headlessClaude, type HeadlessClaude } from '../support/claude-code/run-headless.js';
import { allow, deny, standInPromptTool } from '../support/claude-code/stand-in-prompt-tool.js';

// The harness itself, proven against the real Claude Code: a scripted model asks for Bash, a
// stand-in permission-prompt tool decides, and what ran and what the model was told are seen.
let mock: MockMessagesApi;
let claude: HeadlessClaude;

beforeAll(async () => {
  [mock, claude] = await Promise.all([startMockMessagesApi(), headlessClaude()]);
});
afterAll(async () => {
  await mock?.stop();
  await claude?.remove();
});

const WRITE_MARKER = { command: 'echo hi > marker && cat marker', description: 'Write a marker' };

test.each(['stdio', 'http'] as const)(
  'allowed over %s: the command runs and its output is the next request’s tool result',
  async (transport) => {
    const tool = await standInPromptTool(transport, [allow()]);
    try {
      const conversation = await mock.script([useTool('Bash', WRITE_MARKER), say('Done.')]);
      const run = await claude.run({
        ...{ mock, conversation, mcpServers: { [tool.server]: tool.entry } },
        permissionPromptTool: tool.tool,
      });

      expect(run.code, run.stderr).toBe(0);
      expect(claude.exists('marker')).toBe(true);
      expect(await tool.calls()).toEqual([
        expect.objectContaining({ arguments: expect.objectContaining({ input: WRITE_MARKER }) }),
      ]);
      // Two model requests: the prompt, then the tool's result, which the scripted answer ends.
      expect(conversation.requests).toHaveLength(2);
      const [result] = toolResults(conversation.requests[1]);
      expect(result).toMatchObject({ tool_use_id: run.toolUses[0]!.id, is_error: false });
      expect(resultText(result)).toBe('hi');
      expect(run.result).toMatchObject({ subtype: 'success', result: 'Done.' });
      expect(mock.unknown, 'requests beyond the Messages API').toEqual([]);
    } finally {
      await tool.stop();
      await claude.clean();
    }
  },
);

test.each(['stdio', 'http'] as const)(
  'denied over %s with a message: nothing runs, and the message is the next request’s tool result',
  async (transport) => {
    const tool = await standInPromptTool(transport, [deny('A human said no: not on main.')]);
    try {
      const conversation = await mock.script([useTool('Bash', WRITE_MARKER), say('Understood.')]);
      const run = await claude.run({
        ...{ mock, conversation, mcpServers: { [tool.server]: tool.entry } },
        permissionPromptTool: tool.tool,
      });

      expect(run.code, run.stderr).toBe(0);
      expect(claude.exists('marker')).toBe(false);
      expect(await tool.calls()).toHaveLength(1);
      const [result] = toolResults(conversation.requests[1]);
      expect(result).toMatchObject({ tool_use_id: run.toolUses[0]!.id, is_error: true });
      expect(resultText(result)).toBe('A human said no: not on main.');
      expect(run.result?.permission_denials).toEqual([
        { tool_name: 'Bash', tool_use_id: run.toolUses[0]!.id, tool_input: WRITE_MARKER },
      ]);
    } finally {
      await tool.stop();
      await claude.clean();
    }
  },
);

test('the mock streams turns Claude Code reads whole: the tool input from input_json_delta pieces, text from text_delta', async () => {
  const input = { command: 'printf "%s\\n" "a b" ünïcödé', description: 'Print two words' };
  const conversation = await mock.script([useTool('Bash', input), say('All printed.')]);
  const run = await claude.run({ mock, conversation });

  expect(run.code, run.stderr).toBe(0);
  expect(run.toolUses).toEqual([expect.objectContaining({ name: 'Bash', input })]);
  expect(resultText(toolResults(conversation.requests[1])[0])).toBe('a b\nünïcödé');
  expect(run.result).toMatchObject({ result: 'All printed.' });
  // The prompt reached the model as the user's message.
  expect(JSON.stringify(conversation.requests[0]!.body.messages)).toContain(
    'Do what the script says.',
  );
  expect(mock.strays).toEqual([]);
});
