// @oclif/core's subpaths, never its index (here and in every command): the index also loads
// semver, 47 files, to check the node version on every start.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Plugin } from '@oclif/core/config';
import { flush } from '@oclif/core/flush';
import type { Options } from '@oclif/core/interfaces';
import { run } from '@oclif/core/run';
import { settings } from '@oclif/core/settings';
import { reportError } from './report-error.js';

/**
 * Runs the command named on the command line and exits with the documented code. Errors are
 * reported here rather than by oclif's handler, which prints stacks and knows no exit codes but
 * its own. `bin` is the URL of the bin script that was run.
 */
export async function main(bin: string, { development = false } = {}): Promise<never> {
  // oclif loads commands from their TypeScript sources when NODE_ENV is development or test,
  // whatever bin was run; only bin/dev.js should, and the built CLI never (it costs seconds).
  settings.enableAutoTranspile = development;
  let code = 0;
  const argv = process.argv.slice(2);
  try {
    await run(argv, development ? await fromSources(bin) : ((await ownCommand(bin, argv)) ?? bin));
    await flush();
  } catch (error) {
    code = reportError(error);
  }
  // Exit now rather than when the event loop drains: a command is done when run() returns, and a
  // keep-alive socket or a child's handle must not keep a script waiting.
  process.exit(code);
}

/**
 * For one of switchboard's own commands, oclif is handed the package as its only plugin, so that
 * it loads none of the others (help, autocomplete): finding each package, reading its manifest
 * and matching every dependency against the plugin names cost about 15 ms of every start.
 * Anything else (`help`, `autocomplete`, `--version`, a typo) is run the usual way.
 */
async function ownCommand(bin: string, argv: string[]): Promise<Options | undefined> {
  const root = fileURLToPath(new URL('..', bin));
  // Given package.json, oclif does not look for it.
  const pjson = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as Options['pjson'];
  const plugin = new Plugin({ root, isRoot: true, type: 'core', pjson });
  await plugin.load();
  const flag = argv.findIndex((arg) => arg.startsWith('-'));
  const words = flag === -1 ? argv : argv.slice(0, flag);
  for (let length = words.length; length > 0; length--) {
    if (plugin.commandIDs.includes(words.slice(0, length).join(':'))) {
      return { root, plugins: new Map([[plugin.name, plugin]]) };
    }
  }
  return undefined;
}

/**
 * bin/dev.js: the commands in cli/commands, run by tsx. oclif.manifest.json names the compiled
 * files (and package.json the compiled hooks); oclif ignores a manifest whose version differs from the package's, so the package is
 * presented as version `dev` (bin/dev.js runs with --no-warnings, which hides the mismatch notice).
 */
async function fromSources(bin: string): Promise<Options> {
  const root = fileURLToPath(new URL('..', bin));
  const pjson = JSON.parse(await readFile(`${root}package.json`, 'utf8')) as Options['pjson'] & {
    oclif: { hooks?: Record<string, string> };
  };
  const hooks = Object.fromEntries(
    Object.entries(pjson.oclif.hooks ?? {}).map(([name, file]) => [
      name,
      file.replace(/^\.\/dist\/cli\//, './cli/').replace(/\.js$/, '.ts'),
    ]),
  );
  return {
    root,
    pjson: {
      ...pjson,
      version: 'dev',
      oclif: { ...pjson.oclif, commands: './cli/commands', hooks },
    },
  };
}
