import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import { expect, test } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const README = join(ROOT, 'README.md');
const CONFIGURATION = join(ROOT, 'docs', 'configuration.md');
const PAGES = [
  README,
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(ROOT, 'docs', name)),
];

interface Heading {
  depth: number;
  text: string;
  slug: string;
}

/** The lines of a Markdown file outside fenced code, where `# …` is a heading, not a comment. */
function proseLines(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').filter((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** Headings with the anchors GitHub gives them: its slugger, on the text as rendered. */
function headings(markdown: string): Heading[] {
  const slugger = new GithubSlugger();
  return proseLines(markdown).flatMap((line) => {
    const match = /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line);
    if (!match) return [];
    const rendered = match[2]!.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    return [{ depth: match[1]!.length, text: match[2]!, slug: slugger.slug(rendered) }];
  });
}

/**
 * Every link target in the prose — Markdown's `[…](x)` and HTML's `src="x"`/`href="x"` — code spans
 * left out (a `](` in code is not a link).
 */
function links(markdown: string): string[] {
  const prose = proseLines(markdown)
    .join('\n')
    .replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)|\b(?:src|href)="([^"]+)"/g)].map(
    (match) => (match[1] ?? match[2])!,
  );
}

function read(file: string): string {
  return readFileSync(file, 'utf8');
}

test('regression: the README had no contents list — every ## section is listed in it', () => {
  const readme = read(README);
  const sections = headings(readme).filter((h) => h.depth === 2 && h.text !== 'Contents');
  expect(sections.length).toBeGreaterThan(10);
  const contents = /^## Contents\n([\s\S]*?)\n## /m.exec(readme);
  expect(contents, 'the README has a "## Contents" section').not.toBeNull();
  const listed = new Set([...contents![1]!.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]));
  expect(sections.filter((h) => !listed.has(h.slug)).map((h) => h.text)).toEqual([]);
});

test('regression: the README moved text from under its links — every #anchor in it names one of its headings', () => {
  const readme = read(README);
  const slugs = new Set(headings(readme).map((h) => h.slug));
  const anchors = links(readme).filter((link) => link.startsWith('#'));
  expect(anchors.length).toBeGreaterThan(20);
  expect(anchors.filter((anchor) => !slugs.has(anchor.slice(1)))).toEqual([]);
});

test('regression: the README and docs/ link to other files — each exists, and so does the heading its #anchor names', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of PAGES) {
    for (const link of links(read(page))) {
      if (/^[a-z][a-z+.-]*:/i.test(link) || link.startsWith('#')) continue;
      checked += 1;
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = resolve(dirname(page), decodeURIComponent(path));
      const from = relative(ROOT, page);
      if (!existsSync(target)) {
        broken.push(`${from}: ${link} (no such file)`);
      } else if (anchor !== undefined) {
        const slugs = new Set(headings(read(target)).map((h) => h.slug));
        if (!slugs.has(anchor)) broken.push(`${from}: ${link} (no such heading)`);
      }
    }
  }
  expect(checked).toBeGreaterThan(10);
  expect(broken).toEqual([]);
});

/** Read from the environment, but the desktop's and the XDG base directories', not switchboard's. */
const NOT_OURS = new Set([
  'DISPLAY',
  'WAYLAND_DISPLAY',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(ROOT, dir, name));
}

/**
 * Every variable the server, the CLI and the channel read: `process.env.X` and an `env` passed
 * in (`env.X`, `env['X']`), oclif flags' `env: 'X'`, and the keys of the server's config schema.
 */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  for (const file of [...sourceFiles('src'), ...sourceFiles('cli')]) {
    const source = read(file);
    for (const pattern of [
      /\benv\.([A-Z][A-Z0-9_]+)\b/g,
      /\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g,
      /\benv:\s*['"]([A-Z][A-Z0-9_]+)['"]/g,
    ])
      for (const [, name] of source.matchAll(pattern)) names.add(name!);
  }
  const config = read(join(ROOT, 'src', 'platform', 'config', 'server-config.ts'));
  for (const [, name] of config.matchAll(/^\s+([A-Z][A-Z0-9_]+): z\b/gm)) names.add(name!);
  // @octokit/auth-app's getPrivateKey reads these two from the env it is handed.
  if (config.includes('getPrivateKey(')) {
    names.add('PRIVATE_KEY');
    names.add('PRIVATE_KEY_PATH');
  }
  for (const name of NOT_OURS) names.delete(name);
  return names;
}

test('regression: the env table left out variables — every one the server and CLI read is in docs/configuration.md', () => {
  const names = variablesRead();
  expect(names).toContain('DATABASE_URL');
  expect(names).toContain('SWITCHBOARD_TOKEN');
  expect(names).toContain('SWITCHBOARD_LEASE_TOKEN');
  expect(names.size).toBeGreaterThan(20);
  const documented = existsSync(CONFIGURATION) ? read(CONFIGURATION) : '';
  expect([...names].filter((name) => !documented.includes(`\`${name}\``)).sort()).toEqual([]);
});
