import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runMark } from '../leftover-processes.js';
import { CLAUDE, claudeHome, type ClaudeHome } from '../real-claude-code.js';
import type { Conversation, MockMessagesApi } from './mock-messages-api.js';
import type { McpServerEntry } from './stand-in-prompt-tool.js';

/** Any well-formed key: the mock checks none. Claude Code approves a key by its last 20 characters. */
export const API_KEY = 'sk-ant-api03-switchboard-test-key-0123456789abcdefghij';

export interface HeadlessOptions {
  /** The mock the session talks to, and the session's script on it (`mock.script(…)`). */
  mock: MockMessagesApi;
  conversation: Conversation;
  prompt?: string;
  /** Written to a file given to `--mcp-config` (with `--strict-mcp-config`). */
  mcpServers?: Record<string, McpServerEntry>;
  /** `--permission-prompt-tool`, e.g. `mcp__standin__approval_prompt`. */
  permissionPromptTool?: string;
  /** Written to a file given to `--settings` (hooks, permission rules). */
  settings?: Record<string, unknown>;
  args?: string[];
  env?: Record<string, string>;
  /** Ends the run with SIGKILL past this (default 60 s); the run then reports the signal. */
  timeoutMs?: number;
}

/** One line of `--output-format stream-json --verbose`. */
export type StreamEvent = { type: string; subtype?: string; [field: string]: unknown };

export interface HeadlessRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout's JSON lines, parsed (lines that are not JSON are left out). */
  events: StreamEvent[];
  /** The final `result` event, if the run got that far. */
  result: StreamEvent | undefined;
  /** The tool_use blocks of the assistant's messages, and the tool_result blocks of the user's. */
  toolUses: { id: string; name: string; input: Record<string, unknown> }[];
  toolResults: { tool_use_id: string; content: unknown; is_error?: boolean }[];
}

export interface StartedRun {
  child: ChildProcess;
  done: Promise<HeadlessRun>;
}

/** The real Claude Code in headless mode (`claude -p`), offline, in a home and project of its own. */
export interface HeadlessClaude {
  home: ClaudeHome;
  /** The session's working directory, empty at first: a Bash command's files land here. */
  project: string;
  /** Whether `name` (relative to the project) exists: a command that writes it ran. */
  exists(name: string): boolean;
  run(options: HeadlessOptions): Promise<HeadlessRun>;
  /** Like run, with the child at hand (to signal it mid-call). */
  start(options: HeadlessOptions): Promise<StartedRun>;
  /** Empties the project, for the next run. */
  clean(): Promise<void>;
  remove(): Promise<void>;
}

export async function headlessClaude(): Promise<HeadlessClaude> {
  const home = await claudeHome(); // fails with one line when the binary is missing
  const project = join(home.dir, 'project');
  await mkdir(project);
  // Interactive sessions need onboarding done and the key approved; `-p` needs neither.
  await writeFile(
    join(home.dir, '.claude.json'),
    JSON.stringify({
      hasCompletedOnboarding: true,
      customApiKeyResponses: { approved: [API_KEY.slice(-20)], rejected: [] },
      projects: { [project]: { hasTrustDialogAccepted: true } },
    }),
  );
  let runs = 0;
  const start = async (options: HeadlessOptions): Promise<StartedRun> => {
    const args = await argsFor(home.dir, ++runs, options);
    const child = spawn(CLAUDE, args, {
      cwd: project,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: claudeEnv(home.dir, options.mock, options.env),
    });
    return { child, done: finished(child, options) };
  };
  return {
    home,
    project,
    exists: (name) => existsSync(join(project, name)),
    start,
    run: async (options) => (await start(options)).done,
    async clean() {
      for (const name of await readdir(project))
        await rm(join(project, name), { recursive: true, force: true });
    },
    remove: () => home.remove(),
  };
}

/** Claude Code's whole environment: offline, at the mock, in `home`. */
export function claudeEnv(
  home: string,
  mock: MockMessagesApi,
  env: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    ANTHROPIC_API_KEY: API_KEY,
    ANTHROPIC_BASE_URL: mock.url,
    // Nothing leaves the machine: no update check, no telemetry, no error reports.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ...runMark(),
    ...env,
  };
}

async function argsFor(dir: string, run: number, options: HeadlessOptions): Promise<string[]> {
  const args = ['-p', options.prompt ?? 'Do what the script says.'];
  args.push('--output-format', 'stream-json', '--verbose');
  args.push('--session-id', options.conversation.sessionId);
  if (options.mcpServers) {
    const file = join(dir, `mcp-${run}.json`);
    await writeFile(file, JSON.stringify({ mcpServers: options.mcpServers }));
    args.push('--mcp-config', file, '--strict-mcp-config');
  }
  if (options.permissionPromptTool)
    args.push('--permission-prompt-tool', options.permissionPromptTool);
  if (options.settings) {
    const file = join(dir, `settings-${run}.json`);
    await writeFile(file, JSON.stringify(options.settings));
    args.push('--settings', file);
  }
  return [...args, ...(options.args ?? [])];
}

function finished(child: ChildProcess, options: HeadlessOptions): Promise<HeadlessRun> {
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      void options.mock.sync().then(() => resolve(parse(code, signal, stdout, stderr)), reject);
    });
  });
}

function parse(
  code: number | null,
  signal: NodeJS.Signals | null,
  stdout: string,
  stderr: string,
): HeadlessRun {
  const events = stdout.split('\n').flatMap((line): StreamEvent[] => {
    try {
      return [JSON.parse(line) as StreamEvent];
    } catch {
      return [];
    }
  });
  const blocks = (role: string, type: string) =>
    events
      .filter((event) => event.type === role)
      .flatMap((event) => {
        const content = (event.message as { content?: unknown } | undefined)?.content;
        return Array.isArray(content)
          ? (content as ({ type: string } & Record<string, unknown>)[])
          : [];
      })
      .filter((block) => block.type === type);
  return {
    code,
    signal,
    stdout,
    stderr,
    events,
    result: events.find((event) => event.type === 'result'),
    toolUses: blocks('assistant', 'tool_use') as unknown as HeadlessRun['toolUses'],
    toolResults: blocks('user', 'tool_result') as unknown as HeadlessRun['toolResults'],
  };
}
