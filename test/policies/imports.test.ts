import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { expect, test } from 'vitest';

const DIR = resolve(import.meta.dirname, '../../src/policies');

test('the policy matcher is pure: it imports node builtins, zod and the shared contract only', async () => {
  const files = (await readdir(DIR)).filter((name) => name.endsWith('.ts'));
  expect(files.length).toBeGreaterThan(5);
  const offenders: string[] = [];
  for (const file of files) {
    const source = await readFile(join(DIR, file), 'utf8');
    for (const [, specifier] of source.matchAll(
      /^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm,
    )) {
      if (!/^(node:|zod$|\.\/[a-z-]+\.js$|\.\.\/contract\/[a-z-]+\.js$)/.test(specifier!))
        offenders.push(`${file} imports ${specifier}`);
    }
    if (/\b(readFile|writeFile|fetch|spawn|process\.env)\b/.test(source))
      offenders.push(`${file} does I/O`);
  }
  expect(offenders).toEqual([]);
});
