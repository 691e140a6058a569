import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMark } from '../leftover-processes.js';
import { stopChild } from './mock-messages-api.js';
import { TSX } from './tsx.js';

/**
 * What the stand-in permission-prompt tool answers to one call: one text block, the JSON of
 * `json` (with `updatedInput` set to the input received when `echoInput`) or `text` as is.
 */
export interface PromptAnswer {
  json?: unknown;
  echoInput?: boolean;
  text?: string;
  isError?: boolean;
  /** Answers this long after the call arrived, */
  afterMs?: number;
  /** sending `notifications/progress` (on the call's `_meta.progressToken`) this often meanwhile. */
  progressEveryMs?: number;
}

/** Allows the tool use with its input unchanged, the shape Claude Code documents. */
export const allow = (): PromptAnswer => ({ json: { behavior: 'allow' }, echoInput: true });
export const deny = (message: string): PromptAnswer => ({ json: { behavior: 'deny', message } });

/** One line of the stand-in's log. */
export interface LogEntry {
  kind: string;
  /** ms after the server started, and the epoch time. */
  ms: number;
  at: number;
  [field: string]: unknown;
}

export type McpServerEntry =
  | { type: 'stdio'; command: string; args: string[]; env: Record<string, string> }
  | { type: 'http'; url: string; headers?: Record<string, string> };

export interface StandInPromptTool {
  /** The server's name in --mcp-config. */
  server: 'standin';
  /** For --permission-prompt-tool. */
  tool: string;
  /** Its --mcp-config entry. */
  entry: McpServerEntry;
  /** Everything the server logged so far (across every process it ran as). */
  log(): Promise<LogEntry[]>;
  /** The arguments and `_meta` of each call of the tool so far. */
  calls(): Promise<{ arguments: Record<string, unknown>; meta: Record<string, unknown> | null }[]>;
  stop(): Promise<void>;
}

const SCRIPT = join(import.meta.dirname, 'stand-in-prompt-server.ts');

function killStandIn(pid: number) {
  try {
    if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(SCRIPT)) process.kill(pid, 'SIGKILL');
  } catch {
    // ended already
  }
}

/**
 * A stand-in permission-prompt tool `mcp__standin__approval_prompt` answering `answers` in
 * turn (the last one from then on): on stdio, Claude Code starts it; on HTTP it runs now, in a
 * child process, on a loopback port (answering plain JSON rather than an SSE stream per request
 * with `jsonResponse`).
 */
export async function standInPromptTool(
  transport: 'stdio' | 'http',
  answers: PromptAnswer[],
  options: { jsonResponse?: boolean; outliveSignals?: boolean } = {},
): Promise<StandInPromptTool> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-stand-in-'));
  const env = {
    PATH: process.env.PATH ?? '',
    STAND_IN_LOG: join(dir, 'log.jsonl'),
    STAND_IN_ANSWERS: JSON.stringify(answers),
    ...(options.jsonResponse ? { STAND_IN_JSON_RESPONSE: '1' } : {}),
    ...(options.outliveSignals ? { STAND_IN_OUTLIVE_SIGNALS: '1' } : {}),
    ...runMark(),
  };
  await writeFile(env.STAND_IN_LOG, '');
  let entry: McpServerEntry;
  let stop = () => Promise.resolve();
  if (transport === 'stdio') {
    entry = {
      type: 'stdio',
      command: process.execPath,
      args: ['--import', TSX, SCRIPT, 'stdio'],
      env,
    };
  } else {
    const child = fork(SCRIPT, ['http'], { execArgv: ['--import', TSX], env, stdio: 'inherit' });
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (message: { port: number }) => resolve(message.port));
      child.once('exit', (code) => reject(new Error(`the stand-in exited (${code})`)));
    });
    entry = { type: 'http', url: `http://127.0.0.1:${port}/mcp` };
    stop = () => stopChild(child);
  }
  const log = async () =>
    (await readFile(env.STAND_IN_LOG, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LogEntry);
  return {
    server: 'standin',
    tool: 'mcp__standin__approval_prompt',
    entry,
    log,
    calls: async () =>
      (await log())
        .filter((line) => line.kind === 'call')
        .map((line) => ({
          arguments: line.arguments as Record<string, unknown>,
          meta: line.meta as Record<string, unknown> | null,
        })),
    async stop() {
      await stop();
      // Claude Code ends the stdio servers it starts, but not those it was killed before ending.
      for (const line of await log()) if (line.kind === 'started') killStandIn(line.pid as number);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
