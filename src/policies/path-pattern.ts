import { posix } from 'node:path';
import { escape } from './command-pattern.js';

/**
 * Read and Edit rules take gitignore-style patterns with four anchors: `//path` (the filesystem
 * root), `~/path` (the home directory), `/path` (in Claude Code, the settings file's source; in
 * switchboard, the session's project root, which is its working directory) and `path` or
 * `./path` (the working directory). In a pattern `*` and `?` stay within a path segment, `**`
 * crosses segments, `[…]` is a class. A bare name (`.env`) matches at any depth under its anchor.
 *
 * Deny and ask patterns are broad, allow patterns narrow, where Claude Code's documentation says
 * so or is silent: a single-segment `src/**` matches a `src` at any depth for deny and ask but
 * only `<cwd>/src` for allow; `./.env` only the working directory's `.env` for allow; a broad
 * pattern also covers everything under a directory it matches, and ignores case.
 */
export interface PathPattern {
  anchor: 'root' | 'home' | 'cwd';
  /** Matches a path relative to the anchor ('' for the anchor itself). */
  regex: RegExp;
  /** The literal directories the pattern starts with, relative to the anchor. */
  base: string;
  broad: boolean;
}

/** A file as the tool names it: an absolute path, or a relative one when the cwd is unknown. */
export interface TargetPath {
  path: string;
  absolute: boolean;
}

export interface Anchors {
  cwd: string | null;
  home: string | null;
}

export function compilePathPattern(pattern: string, broad: boolean): PathPattern {
  let anchor: PathPattern['anchor'] = 'cwd';
  let rest = pattern;
  let anchored = false; // a leading `/`, `./`, `//` or `~/` pins the pattern to its anchor
  if (rest.startsWith('//')) [anchor, rest, anchored] = ['root', rest.slice(2), true];
  else if (rest === '~' || rest.startsWith('~/'))
    [anchor, rest, anchored] = ['home', rest.slice(2), true];
  else if (rest.startsWith('/')) [rest, anchored] = [rest.slice(1), true];
  else if (rest.startsWith('./')) [rest, anchored] = [rest.slice(2), !broad];
  const directoryOnly = rest.endsWith('/');
  if (directoryOnly) rest = rest.replace(/\/+$/, '');
  const segments = rest.split('/').filter((segment) => segment !== '' && segment !== '.');
  const singleSegmentDirectory =
    segments.length === 2 && segments[1] === '**' && segments[0] !== '**';
  const anyDepth =
    !anchored &&
    (segments.length <= 1 || (broad && singleSegmentDirectory)) &&
    segments[0] !== '**';
  let body = segmentsRegex(segments);
  if (directoryOnly) body += broad ? '' : '/[\\s\\S]+';
  const prefix = anyDepth ? '(?:[\\s\\S]*/)?' : '';
  const suffix = broad ? '(?:/[\\s\\S]*)?' : '';
  const literal: string[] = [];
  for (const segment of segments) {
    if (/[*?[\\]/.test(segment)) break;
    literal.push(segment);
  }
  return {
    anchor,
    regex: new RegExp(`^${prefix}${body}${suffix}$`, broad ? 'i' : ''),
    base: anyDepth ? '' : literal.slice(0, Math.max(0, segments.length - 1)).join('/'),
    broad,
  };
}

/** The segments as one regex: `**` crosses directories, other segments stay within one. */
function segmentsRegex(segments: string[]): string {
  let body = '';
  let slash = false;
  segments.forEach((segment, i) => {
    if (segment !== '**') {
      body += (slash ? '/' : '') + segmentRegex(segment);
      slash = true;
    } else if (segments.length === 1) body += '[\\s\\S]*';
    else if (i === segments.length - 1) body += '/[\\s\\S]+';
    else {
      body += `${i === 0 ? '' : '/'}(?:[\\s\\S]*/)?`;
      slash = false;
    }
  });
  return body;
}

function segmentRegex(segment: string): string {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]!;
    if (c === '\\' && i + 1 < segment.length) out += escape(segment[++i]!);
    else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[' && segment.indexOf(']', i + 2) !== -1) {
      const close = segment.indexOf(']', i + 2);
      out += `[${segment
        .slice(i + 1, close)
        .replace(/^!/, '^')
        .replace(/\\/g, '\\\\')}]`;
      i = close;
    } else out += escape(c);
  }
  return out;
}

/**
 * Whether the pattern matches the target. A narrow (allow) pattern needs the anchor known; a
 * broad one with an unknown anchor matches if the pattern matches the path below any directory.
 */
export function matchesPath(pattern: PathPattern, target: TargetPath, anchors: Anchors): boolean {
  const anchor = anchorOf(pattern, anchors);
  if (anchor !== null && target.absolute) {
    const rel = below(anchor, target.path, pattern.broad);
    return rel !== null && pattern.regex.test(rel);
  }
  if (!pattern.broad) return false;
  if (!target.absolute && pattern.anchor === 'cwd' && !target.path.startsWith('..'))
    return pattern.regex.test(target.path === '.' ? '' : target.path);
  return tails(target.path).some((tail) => pattern.regex.test(tail));
}

export function anchorOf(pattern: PathPattern, anchors: Anchors): string | null {
  if (pattern.anchor === 'root') return '/';
  return pattern.anchor === 'home' ? anchors.home : anchors.cwd;
}

/** `path` relative to the directory `anchor`, or null when it is not under it. */
export function below(anchor: string, path: string, ignoreCase = false): string | null {
  const base = anchor === '/' ? '' : anchor.replace(/\/+$/, '');
  const [a, p] = ignoreCase ? [base.toLowerCase(), path.toLowerCase()] : [base, path];
  if (p === a) return '';
  return p.startsWith(`${a}/`) ? path.slice(base.length + 1) : null;
}

/** `a/b/c` → `a/b/c`, `b/c`, `c`: the path as seen from each directory above it. */
function tails(path: string): string[] {
  const segments = path.split('/').filter((segment) => segment !== '' && segment !== '..');
  return segments.map((_, i) => segments.slice(i).join('/'));
}

/**
 * The file a tool names, made absolute against the cwd and with `..` resolved, so that
 * `./src/../.env` is `.env`; a Windows drive path is read the way Claude Code reads it
 * (`C:\Users\a` is `/c/Users/a`). Null when the value is no path.
 */
export function resolveTarget(value: unknown, anchors: Anchors): TargetPath | null {
  if (typeof value !== 'string' || value === '' || value.includes('\0')) return null;
  let path = value;
  const drive = /^([A-Za-z]):[\\/]/.exec(path);
  if (drive) path = `/${drive[1]!.toLowerCase()}/${path.slice(3).replace(/\\/g, '/')}`;
  if (path === '~' || path.startsWith('~/')) {
    if (anchors.home === null)
      return { path: posix.normalize(path.slice(2) || '.'), absolute: false };
    path = posix.join(anchors.home, path.slice(1));
  }
  if (path.startsWith('/')) return { path: posix.normalize(path), absolute: true };
  if (anchors.cwd !== null) return { path: posix.resolve(anchors.cwd, path), absolute: true };
  return { path: posix.normalize(path), absolute: false };
}
