// @oclif/core's subpaths, never its index (here and in every command): the index also loads
// semver, 47 files, to check the node version on every start.
import { flush } from '@oclif/core/flush';
import { run } from '@oclif/core/run';
import { settings } from '@oclif/core/settings';
import { reportError } from './report-error.js';

/**
 * Runs the command named on the command line and exits with the documented code. Errors are
 * reported here rather than by oclif's handler, which prints stacks and knows no exit codes but
 * its own.
 */
export async function main(root: string, { development = false } = {}): Promise<never> {
  // oclif loads commands from their TypeScript sources when NODE_ENV is development or test,
  // whatever bin was run; only bin/dev.js should, and the built CLI never (it costs seconds).
  settings.enableAutoTranspile = development;
  if (development) settings.debug = true;
  let code = 0;
  try {
    await run(process.argv.slice(2), root);
    await flush();
  } catch (error) {
    code = reportError(error);
  }
  // Exit now rather than when the event loop drains: a command is done when run() returns, and a
  // keep-alive socket or a child's handle must not keep a script waiting.
  process.exit(code);
}
