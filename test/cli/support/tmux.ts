import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { BIN } from './run-cli.js';

const run = promisify(execFile);

/** Whether tmux is installed (CI installs it: .ci/run). */
export async function hasTmux(): Promise<boolean> {
  try {
    await run('tmux', ['-V']);
    return true;
  } catch {
    return false;
  }
}

export interface TmuxSession {
  /** Keys as tmux names them (`j`, `Enter`, `Escape`); `literal` types text as it is. */
  send(keys: string[], options?: { literal?: boolean }): Promise<void>;
  /** The screen as it is now, one string. */
  screen(): Promise<string>;
  /** Resolves with the screen once it matches; fails with the screen after `timeoutMs`. */
  waitFor(
    text: string | RegExp | ((screen: string) => boolean),
    timeoutMs?: number,
  ): Promise<string>;
  close(): Promise<void>;
}

/**
 * `switchboard ARGS…` in a terminal of its own: a tmux server on a socket of its own (so no
 * other tmux user is touched), a window of `columns`×`rows`, only the given environment.
 */
export async function startInTmux(
  args: string[],
  env: Record<string, string>,
  { columns = 100, rows = 30 } = {},
): Promise<TmuxSession> {
  const socket = `switchboard-test-${randomBytes(4).toString('hex')}`;
  const tmux = (...tmuxArgs: string[]) =>
    run('tmux', ['-L', socket, ...tmuxArgs], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: env.HOME ?? '/tmp', TERM: 'xterm' },
    });
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
  const command = [
    'env',
    ...Object.entries(env).map(([key, value]) => quote(`${key}=${value}`)),
    quote(process.execPath),
    quote(BIN),
    ...args.map(quote),
    // Keep the pane after the command, to read how it ended.
    '; echo "exited $?"; sleep 600',
  ].join(' ');
  await tmux('new-session', '-d', '-s', 'main', '-x', String(columns), '-y', String(rows), command);
  const screen = async () => (await tmux('capture-pane', '-p', '-t', 'main')).stdout;
  return {
    async send(keys, { literal = false } = {}) {
      await tmux('send-keys', '-t', 'main', ...(literal ? ['-l'] : []), ...keys);
    },
    screen,
    async waitFor(text, timeoutMs = 20_000) {
      const started = Date.now();
      for (;;) {
        const now = await screen();
        const matches =
          typeof text === 'string'
            ? now.includes(text)
            : typeof text === 'function'
              ? text(now)
              : text.test(now);
        if (matches) return now;
        if (Date.now() - started > timeoutMs) {
          throw new Error(`timed out waiting for ${String(text)}; the screen:\n${now}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async close() {
      await tmux('kill-server').catch(() => {});
    },
  };
}
