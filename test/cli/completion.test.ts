import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCliHome, runCli, type CliHome } from './support/run-cli.js';

const run = promisify(execFile);

let home: CliHome;
beforeAll(async () => {
  home = await createCliHome();
});
afterAll(() => home?.remove());

/** What bash offers after `words` (the last one being completed), with the completion loaded. */
async function complete(setup: string, words: string[]): Promise<string[]> {
  const script = `${setup}
COMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}
_switchboard_autocomplete; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const { stdout } = await run('bash', ['-c', script]);
  return [...new Set(stdout.split('\n').filter(Boolean))];
}

test('shell completion: `autocomplete script bash` sets up completion of commands and flags', async () => {
  const env = { ...home.env, XDG_CACHE_HOME: join(home.dir, 'cache') };
  // The first step the README gives: prints the instructions, and builds the completion cache.
  const help = await runCli(['autocomplete', 'bash'], env);
  expect(help.code).toBe(0);
  expect(help.stdout).toContain('switchboard autocomplete script bash');

  const script = await runCli(['autocomplete', 'script', 'bash'], env);
  expect(script.code).toBe(0);
  expect(script.stdout).toContain(join(home.dir, 'cache', 'switchboard', 'autocomplete'));
  // What `printf "$(switchboard autocomplete script bash)" >> ~/.bashrc` adds, then sourced.
  const setup = script.stdout.trim();
  expect(await complete(setup, ['switchboard', 'quar'])).toEqual(['quarantine']);
  expect(await complete(setup, ['switchboard', 'todo', 'li'])).toEqual(['list']);
  expect(await complete(setup, ['switchboard', 'todo', 'list', '--be'])).toEqual(['--before']);
});
