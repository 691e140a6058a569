/**
 * A conservative reading of a Bash command, enough to match Claude Code's Bash rules part by
 * part: the simple commands it runs (split on `&&`, `||`, `;`, `|`, `|&`, `&` and newlines,
 * outside quotes), and why it cannot be read whole when it cannot (a substitution, a
 * redirection, a subshell, a group, a keyword, an unbalanced quote…). Only a command read whole
 * may be allowed; the commands found inside substitutions, subshells and groups are kept for deny
 * and ask rules, which fail closed.
 *
 * Hand-written rather than a library: shell-quote reads a newline as a blank (`ls\nrm -rf x` is
 * one command to it) and backticks as text, and the real parsers on npm (mvdan-sh, sh-syntax,
 * tree-sitter-bash) load in hundreds of milliseconds, parse in a third of a millisecond or more,
 * or only asynchronously. Whatever this reader does not understand is a `problem`, never a part.
 */

export interface ShellWord {
  /** As written, quotes and escapes included. */
  raw: string;
  /** What the shell passes on, when the word has no expansion; null when it has one. */
  value: string | null;
}

export interface ShellAnalysis {
  /** The top-level simple commands in order, keywords and redirections taken out. */
  commands: ShellWord[][];
  /** Commands inside substitutions, subshells and groups: for deny and ask rules only. */
  nested: ShellWord[][];
  /** Files that output redirections write (not /dev/null, not `2>&1`). */
  writes: string[];
  /** The first reason the command cannot be read whole, or null when it can. */
  problem: string | null;
  /** A shell operator character inside quotes or after a backslash (see read-preview.ts). */
  quotedOperator: boolean;
}

interface Scan {
  src: string;
  i: number;
  depth: number;
  out: ShellAnalysis;
  heredocs: { delimiter: string; tabs: boolean }[];
}

const BLANK = new Set([' ', '\t']);
const META = new Set([' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')']);
const OPERATOR_CHARS = /[;&|<>()$`\\\n\r]/;
const REDIRECT = /(\d+|\{[A-Za-z_][A-Za-z0-9_]*\})?(&>>|&>|<<<|<<-|<<|<>|<&|>&|>>|>\||<|>)/y;
const KEYWORDS = new Set(['{', '}', 'if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while']);
for (const word of ['until', 'case', 'esac', 'for', 'select', 'function', '[[', ']]', 'coproc'])
  KEYWORDS.add(word);
// Keywords whose following words are not a command (a loop's list, a function's name).
const NOT_A_COMMAND = new Set(['for', 'select', 'case', 'function', 'coproc', '[[']);
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

export function splitCommand(command: string): ShellAnalysis {
  const out: ShellAnalysis = {
    commands: [],
    nested: [],
    writes: [],
    problem: null,
    quotedOperator: false,
  };
  readList({ src: command, i: 0, depth: 0, out, heredocs: [] }, null);
  return out;
}

function problem(scan: Scan, reason: string): void {
  scan.out.problem ??= reason;
}

/** Reads commands up to `end` (the `)` closing a `$(` or a subshell) or the end of the text. */
function readList(scan: Scan, end: ')' | null): void {
  let words: ShellWord[] = [];
  let pending: string | null = null; // an operator that still needs a command after it
  let redirectFirst = false; // a redirection before the first word: no keyword can follow
  const finish = (operator: string) => {
    if (words.length === 0 && !redirectFirst && operator !== '\n' && operator !== 'end')
      problem(scan, `empty command before \`${operator}\``);
    if (words.length > 0) keep(scan, words, redirectFirst);
    words = [];
    redirectFirst = false;
  };
  while (scan.i < scan.src.length) {
    const c = scan.src[scan.i]!;
    const after = scan.src[scan.i + 1];
    if (BLANK.has(c)) {
      scan.i++;
      continue;
    }
    if (c === '\\' && after === '\n') {
      scan.i += 2;
      continue;
    }
    if (c === '#' && (words.length === 0 || BLANK.has(scan.src[scan.i - 1]!))) {
      skipComment(scan);
      continue;
    }
    if (c !== '\n' && c !== ';' && c !== '&' && c !== '|') pending = null;
    if (c === ')') {
      scan.i++;
      if (end === ')') return finish('end');
      problem(scan, 'an unbalanced `)`');
    } else if (c === '(') {
      scan.i++;
      problem(scan, words.length === 0 ? 'a subshell `( … )`' : 'a `(` inside a command');
      inside(scan, () => readList(scan, ')'));
    } else if ((c === '<' || c === '>') && after === '(') {
      const start = scan.i;
      scan.i += 2;
      problem(scan, `a process substitution \`${c}(…)\``);
      inside(scan, () => readList(scan, ')'));
      words.push({ raw: scan.src.slice(start, scan.i), value: null });
    } else if (startsRedirect(scan)) {
      redirectFirst ||= words.length === 0;
      readRedirect(scan);
    } else if (c === '\n' || c === ';' || c === '&' || c === '|') {
      const operator = readOperator(scan);
      if (operator !== '\n' && words.length === 0 && pending !== null)
        problem(scan, `\`${operator}\` right after \`${pending}\``);
      finish(pending !== null && operator === '\n' ? '\n' : operator);
      if (operator === '\n') readHeredocs(scan);
      // A newline after `&&`, `||` or `|` continues the command list, as in Bash.
      if (operator === ';' || operator === '&') pending = null;
      else if (operator !== '\n') pending = operator;
    } else words.push(readWord(scan));
  }
  if (end === ')') problem(scan, 'an unbalanced `(`');
  if (pending !== null) problem(scan, `nothing after \`${pending}\``);
  if (scan.heredocs.length > 0) problem(scan, 'a here-document without its end');
  finish('end');
}

/** Reads what `read` reads as nested: commands there are for deny and ask rules only. */
function inside(scan: Scan, read: () => void): void {
  scan.depth++;
  try {
    read();
  } finally {
    scan.depth--;
  }
}

function keep(scan: Scan, words: ShellWord[], redirectFirst: boolean): void {
  let rest = words;
  if (redirectFirst && (rest[0]!.raw === '!' || KEYWORDS.has(rest[0]!.raw)))
    problem(scan, `\`${rest[0]!.raw}\` after a redirection`);
  while (rest.length > 0 && rest[0]!.raw === '!') rest = rest.slice(1);
  if (rest.length === 0) problem(scan, 'a `!` with no command');
  while (rest.length > 0 && KEYWORDS.has(rest[0]!.raw)) {
    problem(scan, `the shell keyword \`${rest[0]!.raw}\``);
    if (NOT_A_COMMAND.has(rest[0]!.raw)) return;
    rest = rest.slice(1);
  }
  if (rest.length === 0) return;
  (scan.depth === 0 ? scan.out.commands : scan.out.nested).push(rest);
}

function skipComment(scan: Scan): void {
  while (scan.i < scan.src.length && scan.src[scan.i] !== '\n') scan.i++;
}

function readOperator(scan: Scan): string {
  const two = scan.src.slice(scan.i, scan.i + 2);
  const three = scan.src.slice(scan.i, scan.i + 3);
  if (three === ';;&') problem(scan, 'a `case` terminator');
  if (two === ';;' || two === ';&') problem(scan, 'a `case` terminator');
  const operator = ['&&', '||', '|&', ';;', ';&'].includes(two) ? two : scan.src[scan.i]!;
  scan.i += operator.length;
  return operator;
}

function startsRedirect(scan: Scan): boolean {
  const c = scan.src[scan.i]!;
  if ((c === '<' || c === '>') && scan.src[scan.i + 1] === '(') return false;
  REDIRECT.lastIndex = scan.i;
  return REDIRECT.test(scan.src);
}

function readRedirect(scan: Scan): void {
  REDIRECT.lastIndex = scan.i;
  const match = REDIRECT.exec(scan.src)!;
  scan.i = REDIRECT.lastIndex;
  const operator = match[2]!;
  while (BLANK.has(scan.src[scan.i] ?? '')) scan.i++;
  if (scan.i >= scan.src.length || META.has(scan.src[scan.i]!)) {
    problem(scan, `a redirection \`${operator}\` without a target`);
    return;
  }
  const target = readWord(scan);
  const value = target.value ?? target.raw;
  if (operator === '<<' || operator === '<<-') {
    problem(scan, 'a here-document `<<`');
    scan.heredocs.push({ delimiter: target.value ?? target.raw, tabs: operator === '<<-' });
  } else if (operator === '<<<') problem(scan, 'a here-string `<<<`');
  // Every redirection goes to a human, even one that writes no file (`2>&1`, `/dev/null`):
  // a policy allows commands as written in its rules, and a rule names no redirection.
  else if ((operator === '>&' || operator === '<&') && /^(\d+|-)$/.test(value))
    problem(scan, `a redirection \`${operator}${target.raw}\``);
  else if (value === '/dev/null') problem(scan, `a redirection \`${operator} /dev/null\``);
  else {
    problem(scan, `a redirection \`${operator} ${target.raw}\``);
    if (operator !== '<') scan.out.writes.push(value);
  }
}

/** After a newline, the bodies of the here-documents opened on the line just ended. */
function readHeredocs(scan: Scan): void {
  while (scan.heredocs.length > 0) {
    const { delimiter, tabs } = scan.heredocs[0]!;
    let found = false;
    while (scan.i < scan.src.length && !found) {
      const eol = scan.src.indexOf('\n', scan.i);
      const stop = eol === -1 ? scan.src.length : eol;
      const line = scan.src.slice(scan.i, stop);
      scan.i = eol === -1 ? stop : stop + 1;
      found = (tabs ? line.replace(/^\t+/, '') : line) === delimiter;
    }
    if (!found) return;
    scan.heredocs.shift();
  }
}

function readWord(scan: Scan): ShellWord {
  const start = scan.i;
  let value: string | null = '';
  const add = (text: string | null) => {
    value = value === null || text === null ? null : value + text;
  };
  while (scan.i < scan.src.length) {
    const c = scan.src[scan.i]!;
    if (META.has(c)) break;
    if (CONTROL.test(c)) problem(scan, 'a control character');
    if (c === '\\') add(readEscape(scan));
    else if (c === "'") add(readSingleQuoted(scan));
    else if (c === '"') add(readDoubleQuoted(scan));
    else if (c === '$') add(readDollar(scan));
    else if (c === '`') add(readBackticks(scan));
    else {
      add(c);
      scan.i++;
    }
  }
  return { raw: scan.src.slice(start, scan.i), value };
}

function readEscape(scan: Scan): string {
  const next = scan.src[scan.i + 1];
  if (next === undefined) {
    problem(scan, 'a backslash at the end');
    scan.i++;
    return '';
  }
  if (next === '\n') problem(scan, 'a line continuation inside a word');
  if (OPERATOR_CHARS.test(next)) scan.out.quotedOperator = true;
  scan.i += 2;
  return next === '\n' ? '' : next;
}

function readSingleQuoted(scan: Scan): string {
  const close = scan.src.indexOf("'", scan.i + 1);
  const end = close === -1 ? scan.src.length : close;
  const text = scan.src.slice(scan.i + 1, end);
  if (close === -1) problem(scan, 'an unbalanced quote');
  if (OPERATOR_CHARS.test(text)) scan.out.quotedOperator = true;
  scan.i = close === -1 ? end : end + 1;
  return text;
}

function readDoubleQuoted(scan: Scan): string | null {
  let value: string | null = '';
  scan.i++;
  while (scan.i < scan.src.length && scan.src[scan.i] !== '"') {
    const c = scan.src[scan.i]!;
    if (OPERATOR_CHARS.test(c) && c !== '$' && c !== '`') scan.out.quotedOperator = true;
    if (CONTROL.test(c)) problem(scan, 'a control character');
    let part: string | null;
    if (c === '\\' && '$`"\\\n'.includes(scan.src[scan.i + 1] ?? 'x')) part = readEscape(scan);
    else if (c === '$') part = readDollar(scan);
    else if (c === '`') part = readBackticks(scan);
    else {
      part = c;
      scan.i++;
    }
    value = value === null || part === null ? null : value + part;
  }
  if (scan.i >= scan.src.length) problem(scan, 'an unbalanced quote');
  else scan.i++;
  return value;
}

/** `$name`, `${…}`, `$(…)`, `$((…))`, `$'…'`: every expansion makes the word's value unknown. */
function readDollar(scan: Scan): string | null {
  const next = scan.src[scan.i + 1] ?? '';
  if (next === '(') {
    const arithmetic = scan.src[scan.i + 2] === '(';
    problem(
      scan,
      arithmetic ? 'an arithmetic expansion `$((…))`' : 'a command substitution `$(…)`',
    );
    scan.i += arithmetic ? 3 : 2;
    inside(scan, () => readList(scan, ')'));
    if (arithmetic && scan.src[scan.i] === ')') scan.i++;
    return null;
  }
  if (next === '{') return readBraced(scan);
  if (next === '[') problem(scan, 'an arithmetic expansion `$[…]`');
  if (next === "'") {
    problem(scan, "an ANSI-C quoted string `$'…'`");
    scan.i++;
    readSingleQuotedAnsi(scan);
    return null;
  }
  if (next === '"') {
    scan.i++;
    return readDoubleQuoted(scan);
  }
  const name = /^([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])/.exec(scan.src.slice(scan.i + 1));
  if (!name) {
    scan.i++;
    return '$';
  }
  scan.i += 1 + name[1]!.length;
  return null;
}

function readSingleQuotedAnsi(scan: Scan): void {
  scan.i++;
  while (scan.i < scan.src.length && scan.src[scan.i] !== "'")
    scan.i += scan.src[scan.i] === '\\' ? 2 : 1;
  if (scan.i >= scan.src.length) problem(scan, 'an unbalanced quote');
  else scan.i++;
}

/** `${name}` alone is a plain expansion; any operator inside (`${x:-…}`, `${x@P}`) is not. */
function readBraced(scan: Scan): null {
  const start = scan.i + 2;
  let depth = 1;
  let i = start;
  while (i < scan.src.length && depth > 0) {
    const c = scan.src[i]!;
    if (c === '\\') i++;
    else if (c === '{') depth++;
    else if (c === '}') depth--;
    i++;
  }
  if (depth > 0) problem(scan, 'an unbalanced `${`');
  const inner = scan.src.slice(start, depth > 0 ? i : i - 1);
  if (!/^([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])$/.test(inner)) {
    problem(scan, 'a parameter expansion `${…}` with an operator');
    const within = splitCommand(inner);
    scan.out.nested.push(...within.commands, ...within.nested);
  }
  scan.i = i;
  return null;
}

function readBackticks(scan: Scan): null {
  problem(scan, 'a command substitution with backticks');
  let inner = '';
  let i = scan.i + 1;
  while (i < scan.src.length && scan.src[i] !== '`') {
    if (scan.src[i] === '\\' && '`\\$'.includes(scan.src[i + 1] ?? 'x')) i++;
    inner += scan.src[i];
    i++;
  }
  if (i >= scan.src.length) problem(scan, 'an unbalanced backtick');
  scan.i = i + 1;
  const within = splitCommand(inner);
  scan.out.nested.push(...within.commands, ...within.nested);
  scan.out.writes.push(...within.writes);
  return null;
}
