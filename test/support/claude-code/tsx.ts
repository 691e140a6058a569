import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * tsx's loader, for `node --import TSX script.ts`: the helper processes of these tests are
 * TypeScript, and Claude Code starts some of them from a project folder outside the checkout.
 */
export const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
