#!/usr/bin/env node
// The `switchboard` command, over the commands compiled to dist/ (`npm run build`).
import module from 'node:module';
import { fileURLToPath } from 'node:url';
/* global process, URL -- Node's own: importing node:process would load more of Node at every start */

// Node 22.1+ keeps compiled code between runs (Node 20 has no such cache: then this does
// nothing); most of a command's start-up is compiling @oclif/core, and agents start it in loops.
module.enableCompileCache?.();
const built = new URL('../dist/cli/main.js', import.meta.url);
const { main } = await import(built.href).catch((error) => {
  // A copy that was never built: a clone, or the copy Claude Code keeps of a plugin from GitHub.
  if (
    error?.code !== 'ERR_MODULE_NOT_FOUND' ||
    !String(error.message).includes(fileURLToPath(built))
  )
    throw error;
  const root = fileURLToPath(new URL('..', import.meta.url));
  process.stderr.write(
    `switchboard: ${root} is not built (no dist/): run 'npm ci' in it, which builds it, then try again\n`,
  );
  process.exit(1);
});
await main(import.meta.url);
