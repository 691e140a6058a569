#!/usr/bin/env -S node --import tsx --no-warnings
// The `switchboard` command straight from the TypeScript sources, for development.
import { main } from '../cli/main.ts';

await main(import.meta.url, { development: true });
