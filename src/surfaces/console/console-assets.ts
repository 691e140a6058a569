import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Router } from 'express';
import { PACKAGE_ROOT } from '../../platform/package-root.js';
import type { AssetUrls } from '../../kit/pages/layout.js';

const require = createRequire(import.meta.url);
const OWN = join(PACKAGE_ROOT, 'src', 'surfaces', 'console', 'assets');

/** Every file the console's pages load, all served by switchboard itself (no CDN, no build step). */
const FILES: Record<keyof AssetUrls, { name: string; path: string; type: string }> = {
  htmx: {
    name: 'htmx.min.js',
    path: require.resolve('htmx.org/dist/htmx.min.js'),
    type: 'text/javascript',
  },
  sse: {
    name: 'sse.js',
    path: require.resolve('htmx-ext-sse/dist/sse.js'),
    type: 'text/javascript',
  },
  console: { name: 'console.js', path: join(OWN, 'console.js'), type: 'text/javascript' },
  css: { name: 'console.css', path: join(OWN, 'console.css'), type: 'text/css' },
  icon: { name: 'icon.svg', path: join(OWN, 'icon.svg'), type: 'image/svg+xml' },
};

export interface ConsoleAssets {
  urls: AssetUrls;
  routes: Router;
}

/**
 * The assets, read once at start and served from memory under /assets/, each URL carrying a
 * hash of its content so that browsers may cache it for good and still get a changed file.
 */
export function consoleAssets(): ConsoleAssets {
  const routes = Router({ caseSensitive: true });
  const urls = {} as AssetUrls;
  for (const [key, file] of Object.entries(FILES) as [
    keyof AssetUrls,
    (typeof FILES)[keyof AssetUrls],
  ][]) {
    const bytes = readFileSync(file.path);
    const hash = createHash('sha256').update(bytes).digest('base64url').slice(0, 12);
    urls[key] = `/assets/${file.name}?v=${hash}`;
    routes.get(`/assets/${file.name}`, (_req, res) => {
      res
        .type(file.type)
        .set('cache-control', 'public, max-age=31536000, immutable')
        .set('x-content-type-options', 'nosniff')
        .send(bytes);
    });
  }
  return { urls, routes };
}
