// Bundles the CLI into dist/cli (the build runs it, after tsc has compiled src/ to dist/src).
//
// Why: a command's start-up was mostly Node finding, reading and compiling @oclif/core's hundred
// CommonJS files one by one, on every run; agents run the CLI in loops. Bundled, main and every
// command are one file, dist/cli/switchboard.js; the files bin/run.js and the oclif manifest
// name (dist/cli/main.js, dist/cli/commands/…) each re-export their part of it. The plugins
// below take out of every start what it does not use; `npm run bench:cli` measures it (README,
// Performance).
//
// What stays out: the server's modules that `up`, `migrate` and `channel` import dynamically
// (they load from dist/src, compiled by tsc, with their own dependencies), the inbox's terminal
// view (a bundle of its own), oclif's plugins (oclif loads them from their packages), and what
// oclif reaches for only in development.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'dist', 'cli');

const sources = async (dir: string) =>
  (await readdir(join(ROOT, dir), { recursive: true }))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(dir, name));

/**
 * A dynamic import of a project file loads a file of its own, not part of the bundle: the
 * server's modules (`up`, `migrate`, `channel`) from dist/src, where tsc put them; the inbox's
 * terminal view from its own bundle. The path is rewritten from the bundle's place.
 */
const OWN_BUNDLES = ['cli/inbox-prompt.ts'];
const lazyFilesStayOut: Plugin = {
  name: 'lazy-files-stay-out',
  setup(esbuild) {
    esbuild.onResolve({ filter: /^\./ }, (args) => {
      if (args.kind !== 'dynamic-import') return undefined;
      const source = relative(ROOT, resolve(dirname(args.importer), args.path));
      const compiled = source.startsWith('src/')
        ? join(ROOT, 'dist', source)
        : OWN_BUNDLES.includes(source.replace(/\.js$/, '.ts'))
          ? join(OUT, relative('cli', source))
          : undefined;
      return compiled ? { path: `./${relative(OUT, compiled)}`, external: true } : undefined;
    });
  },
};

/**
 * Node's own modules are required, not imported: importing one from an ES module builds a facade
 * that reads every export, and reading some of them loads more modules (`import … from
 * 'node:process'` reads `process.report`, which loads the report and child_process modules).
 *
 * And those that @oclif/core requires at load time for paths a command rarely takes — Windows
 * shell detection, reading arguments from stdin, performance marks — load when first used: each
 * costs milliseconds to compile on every start. Their users reach them as `module.property`,
 * which the proxy forwards.
 */
const LAZY_BUILTINS = new Set(['child_process', 'readline', 'perf_hooks']);
const requiredBuiltins: Plugin = {
  name: 'required-builtins',
  setup(esbuild) {
    const builtins = new Set(builtinModules.filter((name) => !name.startsWith('_')));
    esbuild.onResolve({ filter: /^[a-z_/]+$|^node:/ }, (args) => {
      const name = args.path.replace(/^node:/, '');
      if (!builtins.has(name) || args.kind === 'dynamic-import') return undefined;
      // The require inside the stand-in below is Node's own.
      if (args.namespace === 'builtin' || args.namespace === 'lazy-builtin') {
        return { path: args.path, external: true };
      }
      // Only a require() can be lazy (an import's names are bound when the importer loads), and
      // only oclif's, whose uses of these modules are known to be `module.property`.
      const lazy =
        LAZY_BUILTINS.has(name) &&
        args.kind === 'require-call' &&
        /@oclif\/core\/lib\//.test(args.importer);
      return { path: name, namespace: lazy ? 'lazy-builtin' : 'builtin' };
    });
    esbuild.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, ({ path }) => ({
      contents: `let loaded; const load = () => (loaded ??= require('node:${path}'));
module.exports = new Proxy({}, { get: (_, key) => load()[key], has: (_, key) => key in load() });`,
      loader: 'js',
    }));
    esbuild.onLoad({ filter: /.*/, namespace: 'builtin' }, ({ path }) => ({
      contents: `module.exports = require('node:${path}');`,
      loader: 'js',
    }));
  },
};

/**
 * Two lines of @oclif/core that cost every start more than all of switchboard's own code, changed
 * in the bundle only. Should oclif change either line, the build fails here rather than the CLI
 * silently getting slower.
 */
const OCLIF_EDITS = [
  {
    // A plugin's commands are sorted with localeCompare, and a process's first localeCompare
    // sets up ICU's collator: 10 to 30 ms, for ids that are ASCII (`todo:list`).
    file: /@oclif\/core\/lib\/config\/plugin\.js$/,
    from: '.sort((a, b) => a.id.localeCompare(b.id));',
    to: '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));',
  },
  {
    // The platform ('wsl' or not) comes from wsl-utils, which loads child_process (and more)
    // to answer; is-wsl, which it asks, answers alone.
    file: /@oclif\/core\/lib\/util\/os\.js$/,
    from: "return (await import('wsl-utils')).isWsl ? 'wsl'",
    to: "return (await import('is-wsl')).default ? 'wsl'",
  },
];
const oclifEdits: Plugin = {
  name: 'oclif-edits',
  setup(esbuild) {
    for (const { file, from, to } of OCLIF_EDITS) {
      esbuild.onLoad({ filter: file }, async ({ path }) => {
        const source = await readFile(path, 'utf8');
        if (!source.includes(from)) {
          throw new Error(
            `${path} no longer has ${JSON.stringify(from)}: see scripts/bundle-cli.ts`,
          );
        }
        return { contents: source.replace(from, to), loader: 'js' };
      });
    }
  },
};

/**
 * Packages that @oclif/core requires when it loads but uses only to show help, render an error
 * for its own handler, find commands without a manifest, or spin a spinner: left out of the
 * bundle (about 100 KiB less to parse on every start), they are required from @oclif/core's own
 * dependencies when first used. Their users reach them as `module.property` or call them, which
 * the stand-in forwards; `__esModule` is answered as the real module would, so TypeScript's
 * interop still picks the right export.
 */
const LAZY_PACKAGES = [
  'clean-stack',
  'cli-spinners',
  'ejs',
  'indent-string',
  'lilconfig',
  'minimatch',
  'string-width',
  'tinyglobby',
  'widest-line',
  'wrap-ansi',
];
const lazyPackages: Plugin = {
  name: 'lazy-packages',
  setup(esbuild) {
    const filter = new RegExp(`^(${LAZY_PACKAGES.join('|')})$`);
    esbuild.onResolve({ filter }, (args) =>
      args.kind === 'require-call' && /@oclif\/core\/lib\//.test(args.importer)
        ? { path: args.path, namespace: 'lazy-package', pluginData: args.importer }
        : undefined,
    );
    esbuild.onLoad({ filter: /.*/, namespace: 'lazy-package' }, ({ path, pluginData }) => {
      const esModule = Boolean(
        (createRequire(pluginData as string)(path) as { __esModule?: boolean }).__esModule,
      );
      return {
        contents: `let loaded;
const load = () => (loaded ??= require('node:module').createRequire(require.resolve('@oclif/core/package.json'))(${JSON.stringify(path)}));
module.exports = new Proxy(function () {}, {
  get: (_, key) => (key === '__esModule' ? ${esModule} : load()[key]),
  has: (_, key) => key in load(),
  apply: (_, self, args) => load().apply(self, args),
  construct: (_, args) => new (load())(...args),
});`,
        loader: 'js',
      };
    });
  },
};

await rm(OUT, { recursive: true, force: true });
const options: BuildOptions = {
  absWorkingDir: ROOT,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Less to parse on every start.
  minify: true,
  metafile: true,
  logLevel: 'warning',
  // @oclif/core is CommonJS: its require() calls need a require in an ES module.
  banner: {
    js: "import { createRequire as __switchboardRequire } from 'node:module'; const require = __switchboardRequire(import.meta.url);",
  },
  external: ['@oclif/plugin-help', '@oclif/plugin-autocomplete', 'typescript', 'tsx', 'ts-node'],
  plugins: [lazyFilesStayOut, requiredBuiltins, oclifEdits, lazyPackages],
};

// One file for main and every command: a start then reads, resolves and compiles one module
// rather than a dozen shared chunks. Each command is imported dynamically inside it, so that only
// the one that runs (and what it imports: child_process for the worker, crypto for leases, …)
// is initialised.
const BUNDLE = join(OUT, 'switchboard.js');
const entries = [...(await sources('cli/commands')), ...(await sources('cli/hooks'))];
const idOf = (file: string) => relative('cli', file).replace(/\.ts$/, '');
const results = [
  await build({
    ...options,
    stdin: {
      contents: [
        "export { main } from './cli/main.ts';",
        'export const modules = {',
        ...entries.map((file) => `  ${JSON.stringify(idOf(file))}: () => import('./${file}'),`),
        '};',
      ].join('\n'),
      resolveDir: ROOT,
      sourcefile: 'switchboard.ts',
      loader: 'ts',
    },
    outfile: BUNDLE,
  }),
  ...(await Promise.all(
    OWN_BUNDLES.map((file) =>
      build({ ...options, entryPoints: [file], outfile: join(OUT, `${idOf(file)}.js`) }),
    ),
  )),
];

// The files that bin/run.js and oclif's manifest name, each standing for its part of the bundle.
const from = (out: string) => `./${relative(dirname(out), BUNDLE)}`.replace(/^\.\/\.\.\//, '../');
await writeFile(join(OUT, 'main.js'), `export { main } from '${from(join(OUT, 'main.js'))}';\n`);
for (const file of entries) {
  const out = join(OUT, `${idOf(file)}.js`);
  await mkdir(dirname(out), { recursive: true });
  await writeFile(
    out,
    `import { modules } from '${from(out)}';\nexport default (await modules[${JSON.stringify(idOf(file))}]()).default;\n`,
  );
}

// Each external relative import must name a file that exists next to the output that has it.
const missing: string[] = [];
for (const { metafile } of results) {
  for (const [output, { imports }] of Object.entries(metafile!.outputs)) {
    for (const { path, external } of imports) {
      if (!external || !path.startsWith('.')) continue;
      const target = resolve(ROOT, dirname(output), path);
      if (!existsSync(target))
        missing.push(`${output} imports ${path} (${relative(ROOT, target)})`);
    }
  }
}
if (missing.length) {
  throw new Error(`the bundle imports files that do not exist:\n${missing.join('\n')}`);
}
for (const { metafile } of results) {
  for (const [output, { bytes }] of Object.entries(metafile!.outputs)) {
    console.log(`${output}: ${Math.round(bytes / 1024)} KiB`);
  }
}
