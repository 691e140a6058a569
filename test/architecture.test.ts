import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, test } from 'vitest';

/** The ledger is the core: adapters import it, never the other way round. */
const LEDGER = 'src/ledger';
const ALLOWED = [
  /^node:/,
  /^postgres$/,
  /^\.\/.+/,
  /^\.\.\/db\/open-database\.js$/,
  /^\.\.\/logger\.js$/,
];

test('the ledger imports no framework and no adapter', async () => {
  const files = (await readdir(LEDGER)).filter((name) => name.endsWith('.ts'));
  expect(files.length).toBeGreaterThan(5);
  const offenders: string[] = [];
  for (const file of files) {
    const source = await readFile(join(LEDGER, file), 'utf8');
    for (const [, specifier] of source.matchAll(
      /^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm,
    )) {
      if (!ALLOWED.some((pattern) => pattern.test(specifier!)))
        offenders.push(`${file} imports ${specifier}`);
    }
  }
  expect(offenders).toEqual([]);
});
