import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { runMark } from '../leftover-processes.js';
import { TSX } from './tsx.js';

/** One content block of a scripted assistant turn. */
export type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; name: string; input: Record<string, unknown>; id?: string };

/** An assistant turn that answers with text (stop reason `end_turn`). */
export const say = (text: string): Block[] => [{ type: 'text', text }];
/** An assistant turn that asks for one tool (stop reason `tool_use`); ids default to `toolu_mock_N`. */
export const useTool = (name: string, input: Record<string, unknown>, id?: string): Block[] => [
  { type: 'tool_use', name, input, ...(id ? { id } : {}) },
];

/** A request as the mock received it (without the API key), and what it answered. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
  answer: Block[];
  /** Whether the answer was a scripted turn (not the plain "done" past a script's end). */
  scripted: boolean;
}

export type ToMock =
  | { type: 'script'; id: number; sessionId: string; turns: Block[][] }
  | { type: 'sync'; id: number };
export type FromMock =
  | { type: 'listening'; port: number }
  | { type: 'done'; id: number }
  | { type: 'request' | 'unknown'; request: RecordedRequest };

/** One Claude Code session's side of the mock: its script and every request it made. */
export interface Conversation {
  /** Given to Claude Code as `--session-id`; the mock tells sessions apart by it. */
  sessionId: string;
  /** The session's `POST /v1/messages` requests so far, in order. */
  requests: RecordedRequest[];
}

export interface MockMessagesApi {
  /** For ANTHROPIC_BASE_URL. */
  url: string;
  /** Scripts a new session: its Nth request is answered with turns[N], then with a plain "done". */
  script(turns: Block[][]): Promise<Conversation>;
  /** Messages requests of no scripted session. */
  strays: RecordedRequest[];
  /** Requests to anything but `POST /v1/messages`. */
  unknown: RecordedRequest[];
  /** Resolves once every request the mock answered so far is recorded here. */
  sync(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A local stand-in for Anthropic's Messages API, streaming scripted turns as the API streams
 * them. It runs in a child process, so it answers while the test's own event loop is busy or
 * blocked waiting for Claude Code; what it receives comes back over IPC.
 */
export async function startMockMessagesApi(): Promise<MockMessagesApi> {
  const child = fork(join(import.meta.dirname, 'mock-messages-api-process.ts'), [], {
    execArgv: ['--import', TSX],
    env: { PATH: process.env.PATH ?? '', ...runMark() },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const conversations = new Map<string, Conversation>();
  const strays: RecordedRequest[] = [];
  const unknown: RecordedRequest[] = [];
  const waiting = new Map<number, () => void>();
  let ids = 0;
  const port = new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the mock Messages API exited (${code})`)));
    child.on('message', (message: FromMock) => {
      if (message.type === 'listening') resolve(message.port);
      else if (message.type === 'done') waiting.get(message.id)?.();
      else if (message.type === 'unknown') unknown.push(message.request);
      else {
        const session = message.request.headers['x-claude-code-session-id'];
        const conversation = typeof session === 'string' ? conversations.get(session) : undefined;
        (conversation?.requests ?? strays).push(message.request);
      }
    });
  });
  const ask = (message: ToMock) =>
    new Promise<void>((resolve) => {
      waiting.set(message.id, () => {
        waiting.delete(message.id);
        resolve();
      });
      child.send(message);
    });
  return {
    url: `http://127.0.0.1:${await port}`,
    async script(turns) {
      const conversation = { sessionId: randomUUID(), requests: [] };
      conversations.set(conversation.sessionId, conversation);
      await ask({ type: 'script', id: ++ids, sessionId: conversation.sessionId, turns });
      return conversation;
    },
    strays,
    unknown,
    sync: () => ask({ type: 'sync', id: ++ids }),
    stop: () => stopChild(child),
  };
}

/** Ends a helper process: SIGKILL, as one may be set to outlive other signals. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/** The tool_result blocks a request carries in its last message (what the model is told). */
export function toolResults(request: RecordedRequest | undefined): ToolResult[] {
  const messages = (request?.body.messages ?? []) as { role: string; content: unknown }[];
  const last = messages.at(-1);
  if (!last || !Array.isArray(last.content)) return [];
  return (last.content as ToolResult[]).filter((block) => block.type === 'tool_result');
}

export interface ToolResult {
  type: 'tool_result';
  tool_use_id: string;
  content: string | { type: string; text?: string }[];
  is_error?: boolean;
}

/** A tool result's content as one string. */
export function resultText(result: ToolResult | undefined): string {
  if (!result) return '';
  if (typeof result.content === 'string') return result.content;
  return result.content.map((part) => part.text ?? '').join('');
}
