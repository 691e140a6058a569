#!/usr/bin/env node
// The `switchboard` command, over the commands compiled to dist/ (`npm run build`).
import { main } from '../dist/cli/main.js';

await main(import.meta.url);
