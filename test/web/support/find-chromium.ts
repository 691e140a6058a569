import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';
import { chromium } from 'playwright-core';

/** Flags for every launch, by the tests and the bench. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface FoundChromium {
  path: string;
  /** Where it was found, for the one line that says which browser the run uses. */
  source: string;
}

const HOW_TO_GET_ONE =
  'set CHROMIUM_PATH to a Chromium or Chrome, install one (apt-get install chromium), or run `npm install` (the dev dependency @sparticuz/chromium ships one)';

/**
 * The Chromium the browser tests and the console bench drive, the first of:
 * 1. CHROMIUM_PATH;
 * 2. a Chromium or Chrome on PATH (Debian's chromium, which .ci/run installs);
 * 3. Playwright's own browser, when `npx playwright install chromium` put one in its cache;
 * 4. the Chromium build inside the @sparticuz/chromium package (a dev dependency), unpacked
 *    once into node_modules/.cache: on a machine with only Node, `npm install` brings it.
 * None: throws, with one line saying how to get one.
 *
 * The last is chrome-headless-shell, which has no notification platform: see browser.ts.
 */
export async function findChromium(): Promise<FoundChromium> {
  const given = process.env.CHROMIUM_PATH;
  if (given) {
    if (!existsSync(given))
      throw new Error(`CHROMIUM_PATH=${given} does not exist: ${HOW_TO_GET_ONE}`);
    return { path: given, source: 'CHROMIUM_PATH' };
  }
  for (const name of ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome']) {
    const path = onPath(name);
    if (path) return { path, source: `${name} on PATH` };
  }
  const playwrights = playwrightsChromium();
  if (playwrights) return { path: playwrights, source: "Playwright's browser cache" };
  const packaged = await unpackSparticuzChromium();
  if (packaged) return packaged;
  throw new Error(`no Chromium for the browser tests: ${HOW_TO_GET_ONE}`);
}

function playwrightsChromium(): string | undefined {
  try {
    const path = chromium.executablePath();
    return existsSync(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/**
 * @sparticuz/chromium ships its browser Brotli-compressed (bin/chromium.br); its own unpacker
 * writes to a fixed file in the temporary directory, which two processes at once can see half
 * written. Unpacked here into a file of its own, then renamed into place: whoever comes second
 * finds a whole one, or writes the same bytes again.
 */
async function unpackSparticuzChromium(): Promise<FoundChromium | undefined> {
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve('@sparticuz/chromium');
  } catch {
    return undefined;
  }
  let root = dirname(entry);
  while (!existsSync(join(root, 'package.json')) || !existsSync(join(root, 'bin'))) {
    if (dirname(root) === root) return undefined;
    root = dirname(root);
  }
  const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    version: string;
  };
  const source = `@sparticuz/chromium ${version} (chrome-headless-shell)`;
  const cache = join(root, '..', '..', '.cache', 'switchboard-chromium', version);
  const path = join(cache, 'chromium');
  if (existsSync(path)) return { path, source };
  await mkdir(cache, { recursive: true });
  const partial = `${path}.${process.pid}.partial`;
  try {
    await pipeline(
      createReadStream(join(root, 'bin', 'chromium.br')),
      createBrotliDecompress(),
      createWriteStream(partial),
    );
    await chmod(partial, 0o755);
    await rename(partial, path);
  } finally {
    await rm(partial, { force: true });
  }
  return { path, source };
}
