import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Router } from 'express';
import { PACKAGE_ROOT } from '../../platform/package-root.js';

const FILE = join(PACKAGE_ROOT, 'src', 'surfaces', 'console', 'assets', 'sw.js');

/**
 * `GET /sw.js`, the console's service worker (Web Push). At the root, so that its scope is the
 * whole console; never cached for long (browsers look for a new one on their own, at most daily),
 * and under a policy that lets it load nothing at all.
 */
export function serviceWorkerRoute(): Router {
  const bytes = readFileSync(FILE);
  const router = Router({ caseSensitive: true });
  router.get('/sw.js', (_req, res) => {
    res
      .type('text/javascript')
      .set({
        'cache-control': 'no-cache',
        'content-security-policy': "default-src 'none'",
        'x-content-type-options': 'nosniff',
      })
      .send(bytes);
  });
  return router;
}
