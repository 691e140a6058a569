import { join } from 'node:path';
import { readCredentialsFile } from '../../src/platform/config/credentials-file.js';
import { startCli, type CliResult, type RunningCli } from '../cli/support/run-cli.js';

export interface ServerProcess {
  cli: RunningCli;
  pid: number;
  url: string;
  /** Everything it logged on stderr so far (JSON lines). */
  stderr(): string;
  /** Whether it is still running. */
  running(): boolean;
  /** Sends `signal` and waits for the process to end. */
  stop(signal: NodeJS.Signals): Promise<CliResult>;
}

/**
 * The real server, `switchboard up --port PORT`, as a child process of its own (built CLI, not
 * tsx) — something a test can SIGKILL. `env` is the whole of its switchboard environment
 * (data directory, XDG folders, DATABASE_URL, WEBHOOK_SECRET, …). Resolves once it listens.
 */
export async function startServerProcess(
  port: number,
  env: Record<string, string>,
  options: { lifetime?: 'test' | 'file' } = {},
): Promise<ServerProcess> {
  const cli = startCli(['up', '--port', String(port)], env, options);
  let stderr = '';
  cli.child.stderr.on('data', (chunk: string) => (stderr += chunk));
  await cli.waitFor(/listening on (http:\S+)/, 90_000);
  const url = /listening on (http:\S+)/.exec(cli.stdout)![1]!;
  return {
    cli,
    pid: cli.child.pid!,
    url,
    stderr: () => stderr,
    running: () => cli.child.exitCode === null && cli.child.signalCode === null,
    async stop(signal) {
      cli.child.kill(signal);
      return cli.done;
    },
  };
}

/** The admin token `up` saved on its first start: the current entry of the credentials file under XDG_CONFIG_HOME. */
export async function readAdminToken(xdgConfigHome: string): Promise<string> {
  const file = join(xdgConfigHome, 'switchboard', 'credentials.json');
  const { current, servers } = (await readCredentialsFile(file))!;
  return servers[current!]!.token;
}
