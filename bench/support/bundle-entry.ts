import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Inside the checkout, so that the bundle's packages resolve from its node_modules. */
const OUT_DIR = join(PACKAGE_ROOT, 'node_modules', '.cache', 'switchboard-bench');

const bundles = new Map<string, Promise<string>>();

/**
 * The processes a benchmark starts (a server, a bare reference) run as plain JavaScript, as the
 * built product does: `node --import tsx` spent a second and two of CPU starting each one (its
 * loader sees every module the server loads), in every benchmark and every smoke test of them.
 * `entry` (a TypeScript file) is bundled with its project files by esbuild, packages left
 * to node_modules, once per process that asks; returns the bundle's path. The code is the same
 * as tsc's build of it: esbuild strips the types as tsx did.
 */
export function bundleEntry(entry: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = bundleOnce(entry);
    bundles.set(entry, bundle);
  }
  return bundle;
}

async function bundleOnce(entry: string): Promise<string> {
  const name = basename(entry).replace(/\.ts$/, '.mjs');
  const path = join(OUT_DIR, name);
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    // The profiles BENCH_CPU_PROFILE writes point back to the sources (DevTools reads the map).
    sourcemap: 'linked',
    outfile: path,
    logLevel: 'silent',
  });
  await mkdir(OUT_DIR, { recursive: true });
  // Written under names of their own, then renamed: several processes may bundle at once.
  const suffix = `.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const written: string[] = [];
  try {
    for (const file of result.outputFiles) {
      await writeFile(file.path + suffix, file.contents);
      written.push(file.path);
    }
    // The map first: a bundle in place never points at a map that is not.
    for (const file of written.sort((a, b) => Number(a === path) - Number(b === path))) {
      await rename(file + suffix, file);
    }
  } catch (error) {
    await Promise.all(written.map((file) => rm(file + suffix, { force: true })));
    throw error;
  }
  return path;
}
