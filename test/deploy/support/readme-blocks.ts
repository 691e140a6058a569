import { readFileSync } from 'node:fs';
import { ROOT } from './deploy-files.js';

/**
 * The code block that follows `<!-- deploy:NAME … -->` in the README: what a reader copies, so
 * that a test runs the documented configuration itself rather than a copy that could drift.
 */
export function readmeBlock(name: string): string {
  const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
  const marker = readme.indexOf(`<!-- deploy:${name}`);
  if (marker === -1) throw new Error(`the README has no <!-- deploy:${name} --> block`);
  const block = /```[a-z]*\n([\s\S]*?)\n```/.exec(readme.slice(marker));
  if (!block) throw new Error(`no code block follows <!-- deploy:${name} --> in the README`);
  return `${block[1]!}\n`;
}

/**
 * Replaces each `from` with its `to`, every occurrence; one that does not occur fails, so that
 * the README changing under the test is said, not silently tested no more.
 */
export function substitute(text: string, replacements: [from: string, to: string][]): string {
  return replacements.reduce((out, [from, to]) => {
    if (!out.includes(from)) throw new Error(`the README's block no longer has ${from}:\n${text}`);
    return out.split(from).join(to);
  }, text);
}
