#!/usr/bin/env node
// The `switchboard` command, over the commands compiled to dist/ (`npm run build`).
import module from 'node:module';

// Node 22.1+ keeps compiled code between runs (Node 20 has no such cache: then this does
// nothing); most of a command's start-up is compiling @oclif/core, and agents start it in loops.
module.enableCompileCache?.();
const { main } = await import('../dist/cli/main.js');
await main(import.meta.url);
