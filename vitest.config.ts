import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // `npm test` leaves out the slow groups, each a folder of its own run as a named step
    // (`npm run test:<group>`, and .ci/run): browser, terminal, faults, deploy, package,
    // claude-code, bench. A group's tool missing fails its files (test/support/require-tool.ts).
    include: ['test/**/*.test.ts'],
    // Test files that fail on purpose, run by test/exit-status.test.ts (`--dir test/fixtures/exit-status`).
    exclude: [...configDefaults.exclude, 'test/fixtures/**'],
    globalSetup: ['test/support/global-setup.ts'],
    // oclif's runCommand and the CLI tests read the real console.
    disableConsoleIntercept: true,
    // Two files at a time (vitest's default on two cores is one): most of a file's time is spent
    // waiting on child processes, streams and the database, so the pair shares the cores well.
    maxWorkers: 2,
    // A worker keeps its modules from one file to the next instead of loading the server's whole
    // graph again for each (import time 238 s → 21 s summed over the files, `npm test` 805 → 648 s
    // on 2 cores). Each file starts its own servers, schemas and nock interceptors, and cleans
    // up what it changed globally (nock, fake timers) after itself.
    isolate: false,
    testTimeout: 30_000,
    // Waiting for something asynchronous (a wake, a child process) on a loaded 2-core machine.
    expect: { poll: { timeout: 10_000, interval: 50 } },
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
