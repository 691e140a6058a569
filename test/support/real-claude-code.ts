import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(import.meta.dirname, '..', '..');
/** The real Claude Code, from the dev dependency `@anthropic-ai/claude-code` (its native binary). */
export const CLAUDE = join(ROOT, 'node_modules', '.bin', 'claude');

export interface ClaudeRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** A throwaway home for the real Claude Code: its settings, plugins and marketplaces stay in it. */
export interface ClaudeHome {
  dir: string;
  /** Runs `claude ARGS…` with this home, offline, with `env` added; never throws on a failure. */
  run(args: string[], env?: Record<string, string>): Promise<ClaudeRun>;
  remove(): Promise<void>;
}

export async function claudeHome(): Promise<ClaudeHome> {
  if (!existsSync(CLAUDE)) {
    throw new Error(
      `the real Claude Code is missing (${CLAUDE}): 'npm ci' installs it (@anthropic-ai/claude-code)`,
    );
  }
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-claude-home-'));
  await writeFile(join(dir, '.claude.json'), JSON.stringify({ hasCompletedOnboarding: true }));
  const run = async (args: string[], env: Record<string, string> = {}): Promise<ClaudeRun> => {
    try {
      const { stdout, stderr } = await promisify(execFile)(CLAUDE, args, {
        cwd: dir,
        timeout: 60_000,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: dir,
          // Nothing leaves the machine: no update check, no telemetry, no error reports.
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          ...env,
        },
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: unknown; stdout?: string; stderr?: string };
      if (typeof failed.code !== 'number') throw error;
      return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
    }
  };
  return { dir, run, remove: () => rm(dir, { recursive: true, force: true }) };
}
