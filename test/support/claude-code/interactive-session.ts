import { execFile, execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { CLAUDE } from '../real-claude-code.js';
import type { Conversation, MockMessagesApi } from './mock-messages-api.js';
import { claudeEnv, type HeadlessClaude } from './run-headless.js';

export interface InteractiveSession {
  /** What the terminal shows now. */
  screen(): Promise<string>;
  /** Resolves once the screen matches `pattern` (and fails the test if it does not in 20 s). */
  waitFor(pattern: RegExp): Promise<string>;
  /** Types `text` literally, or presses a key by tmux's name for it (`Enter`, `Escape`). */
  type(text: string): Promise<void>;
  press(key: string): Promise<void>;
  stop(): Promise<void>;
}

const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * The real Claude Code in its terminal interface, in a detached tmux session of its own (its own
 * server socket), offline against the mock: for what only an interactive session does.
 */
export async function startInteractive(
  claude: HeadlessClaude,
  options: {
    mock: MockMessagesApi;
    conversation: Conversation;
    settings?: Record<string, unknown>;
    args?: string[];
  },
): Promise<InteractiveSession> {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'ignore' });
  } catch {
    throw new Error("tmux is missing: '.ci/run' installs it (apt-get install tmux)");
  }
  const socket = join(claude.home.dir, `tmux-${options.conversation.sessionId}.sock`);
  const args = ['--session-id', options.conversation.sessionId, ...(options.args ?? [])];
  if (options.settings) {
    const file = join(claude.home.dir, `settings-${options.conversation.sessionId}.json`);
    await writeFile(file, JSON.stringify(options.settings));
    args.push('--settings', file);
  }
  const env = Object.entries(claudeEnv(claude.home.dir, options.mock, { TERM: 'xterm-256color' }));
  const command = ['env', '-i', ...env.map(([name, value]) => `${name}=${value}`), CLAUDE, ...args];
  const tmux = (...words: string[]) =>
    promisify(execFile)('tmux', ['-S', socket, ...words], { encoding: 'utf8' });
  await tmux(
    ...['new-session', '-d', '-x', '150', '-y', '50', '-c', claude.project],
    command.map(quote).join(' '),
  );
  const pid = Number((await tmux('display-message', '-p', '#{pane_pid}')).stdout.trim());
  const screen = async () => (await tmux('capture-pane', '-p')).stdout;
  const session: InteractiveSession = {
    screen,
    async waitFor(pattern) {
      let shown = '';
      for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(100))
        if (pattern.test((shown = await screen()))) return shown;
      throw new Error(`the terminal never showed ${String(pattern)}; it shows:\n${shown}`);
    },
    type: async (text) => void (await tmux('send-keys', '-l', text)),
    press: async (key) => void (await tmux('send-keys', key)),
    async stop() {
      await tmux('kill-server').catch(() => undefined);
      // Claude Code writes into its home as it ends: the home is removed only once it has.
      for (let alive = true; alive; await sleep(50)) {
        try {
          process.kill(pid, 0);
        } catch {
          alive = false;
        }
      }
    },
  };
  return session;
}
