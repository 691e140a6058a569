import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The container test alone (`npm run test:container`): it builds images and runs podman, so it
// is not part of `npm test`; .ci/run runs it as a step of its own.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/deploy/**/*.podman.ts'],
    disableConsoleIntercept: true,
    testTimeout: 120_000,
    hookTimeout: 900_000,
  },
});
