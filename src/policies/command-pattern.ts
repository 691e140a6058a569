/**
 * Claude Code's wildcard patterns for Bash commands (and, the same way, skill names and
 * PowerShell commands): `*` matches any sequence of characters, spaces included; a trailing
 * ` *` is a word boundary (`ls *` matches `ls` and `ls -la`, not `lsof`; `ls*` matches all
 * three); a trailing `:*` is the legacy spelling of ` *`, a `:*` anywhere else is literal; `\*`
 * is a literal star. Without a star the pattern matches the exact command.
 */

export interface CommandPattern {
  /** Matches a whole command text (words joined by single spaces). */
  regex: RegExp;
  /** The literal first word every match starts with, to skip the rule quickly; null if none. */
  firstWord: string | null;
  /** The pattern has a wildcard, so it is a prefix or wildcard rule rather than an exact one. */
  wildcard: boolean;
}

/**
 * `broad` is for deny and ask rules. Where the documentation is silent — a trailing ` *` after
 * another wildcard (`git * main *`) — a broad pattern lets the trailing part be empty and a
 * narrow (allow) one does not.
 */
export function compileCommandPattern(pattern: string, broad: boolean, flags = ''): CommandPattern {
  const source = /(^|[^\\]):\*$/.test(pattern) ? `${pattern.slice(0, -2)} *` : pattern;
  const pieces: (string | null)[] = []; // literal text, or null for a star
  let literal = '';
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\' && (source[i + 1] === '*' || source[i + 1] === '\\')) literal += source[++i];
    else if (c === '*') {
      pieces.push(literal, null);
      literal = '';
    } else literal += c;
  }
  pieces.push(literal);
  const stars = pieces.filter((piece) => piece === null).length;
  const last = pieces.length - 1;
  // `prefix *` at the end: the star is preceded by a literal ending in a space, then nothing.
  const boundary = stars > 0 && pieces[last] === '' && /[^ ] $|^ $/.test(pieces[last - 2] ?? '');
  let body = '';
  pieces.forEach((piece, index) => {
    if (piece !== null) {
      const text = boundary && index === last - 2 ? piece.slice(0, -1) : piece;
      body += escape(text);
    } else if (boundary && index === last - 1) {
      body += stars === 1 || broad ? '(?: [\\s\\S]*)?' : ' [\\s\\S]*';
    } else body += '[\\s\\S]*';
  });
  const head = pieces[0] ?? '';
  const space = head.indexOf(' ');
  const firstWord =
    space > 0
      ? head.slice(0, space)
      : stars === 0 || (boundary && stars === 1)
        ? head.trim()
        : null;
  return {
    regex: new RegExp(`^${body}$`, flags),
    firstWord: firstWord === '' || flags.includes('i') ? null : firstWord,
    wildcard: stars > 0,
  };
}

export function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** A plain glob where `*` matches anything, for tool names and parameter values. */
export function compileGlob(pattern: string, flags = ''): RegExp {
  return new RegExp(`^${pattern.split('*').map(escape).join('[\\s\\S]*')}$`, flags);
}
