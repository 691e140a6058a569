import type { ShellWord } from './split-command.js';

/**
 * The texts a simple command is matched as. Before matching, Claude Code strips the wrappers
 * `timeout`, `time`, `nice`, `nohup`, `stdbuf`, `command`, `builtin`, `noglob` and a bare
 * `xargs`, and a leading assignment of a known-safe variable (`NODE_ENV=test npm test` is
 * `npm test` to an allow rule). Exec wrappers (`watch`, `setsid`, `ionice`, `flock`, …) and
 * `find -exec`/`-delete` are allowed only by an exact rule. Deny and ask rules see through any
 * assignment and any exec wrapper (`sudo`, `env`, …), and also match the command's words unquoted.
 */

// Known-safe variables; the documentation names LANG, TZ, NO_COLOR and NODE_ENV "etc.": the
// rest are of the same kind (locale, colour, CI flags) and none changes what a program runs.
const SAFE_VARIABLES = new Set(['LANG', 'LANGUAGE', 'LC_ALL', 'TZ', 'NO_COLOR', 'FORCE_COLOR']);
for (const name of ['CLICOLOR', 'CLICOLOR_FORCE', 'TERM', 'CI', 'NODE_ENV', 'RUST_BACKTRACE'])
  SAFE_VARIABLES.add(name);
// Commands that run their arguments as another command.
const EXEC_WRAPPERS = new Set(['watch', 'setsid', 'ionice', 'flock', 'env', 'sudo', 'doas']);
for (const name of ['xargs', 'nohup', 'nice', 'timeout', 'stdbuf', 'time', 'command', 'builtin'])
  EXEC_WRAPPERS.add(name);
for (const name of ['noglob', 'exec', 'eval', 'chroot', 'nsenter', 'unshare', 'runuser', 'su'])
  EXEC_WRAPPERS.add(name);
for (const name of ['chrt', 'taskset', 'caffeinate', 'unbuffer', 'strace', 'ltrace', 'script'])
  EXEC_WRAPPERS.add(name);
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'fish']);
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=/;
const DURATION = /^\d+(\.\d+)?[smhd]?$/;

export interface AllowForms {
  /** The command as written and without its wrappers and safe assignments. */
  texts: string[];
  /** Only an exact rule (no wildcard) may allow it. */
  exactOnly: boolean;
}

export const text = (words: ShellWord[]) => words.map((word) => word.raw).join(' ');
const valueOf = (word: ShellWord | undefined) => word?.value ?? null;

export function allowForms(words: ShellWord[]): AllowForms {
  let i = 0;
  while (i < words.length) {
    const assignment = ASSIGNMENT.exec(words[i]!.raw);
    if (!assignment || !SAFE_VARIABLES.has(assignment[1]!) || words[i]!.value === null) break;
    i++;
  }
  for (let next = stripWrapper(words, i); next !== null && next < words.length;)
    [i, next] = [next, stripWrapper(words, next)];
  const rest = words.slice(i);
  const texts = [text(words)];
  if (i > 0 && rest.length > 0) texts.push(text(rest));
  return { texts, exactOnly: runsAnother(rest) };
}

/** Where the wrapped command starts when `words[i]` is a wrapper Claude Code strips. */
function stripWrapper(words: ShellWord[], i: number): number | null {
  const name = valueOf(words[i]);
  const arg = (k: number) => valueOf(words[k]) ?? '';
  let j = i + 1;
  switch (name) {
    case 'nohup':
    case 'builtin':
    case 'noglob':
      return j;
    case 'time':
      return arg(j) === '-p' ? j + 1 : j;
    case 'command':
    case 'xargs':
      return arg(j).startsWith('-') || arg(j) === '' ? null : j;
    case 'nice':
      if (/^-\d+$|^--adjustment=-?\d+$/.test(arg(j))) return j + 1;
      return arg(j) === '-n' && /^-?\d+$/.test(arg(j + 1)) ? j + 2 : j;
    case 'timeout':
      for (;;) {
        if (
          /^(--preserve-status|--foreground|-v|--verbose|--signal=.+|--kill-after=.+)$/.test(arg(j))
        )
          j++;
        else if (/^(-s|--signal|-k|--kill-after)$/.test(arg(j)) && arg(j + 1) !== '') j += 2;
        else break;
      }
      return DURATION.test(arg(j)) ? j + 1 : null;
    case 'stdbuf':
      while (/^(-[ioe].+|--(input|output|error)=.+)$/.test(arg(j))) j++;
      return j > i + 1 ? j : null;
    default:
      return null;
  }
}

/** An exec wrapper left after stripping, a `find` that runs or deletes, a `sh -c`. */
function runsAnother(words: ShellWord[]): boolean {
  const name = basename(valueOf(words[0]) ?? '');
  const args = words.slice(1).map((word) => word.value ?? word.raw);
  if (name === 'command' && /^-[vV]$/.test(args[0] ?? '')) return false;
  if (EXEC_WRAPPERS.has(name)) return true;
  if (name === 'find') return args.some((arg) => /^-(exec|execdir|ok|okdir|delete)$/.test(arg));
  return SHELLS.has(name) && args.some((arg) => /^-[a-z]*c[a-z]*$/.test(arg));
}

/**
 * Every text a deny or ask rule is tried against: as written and unquoted, without leading
 * assignments, after each word that follows an exec wrapper, and with a path-qualified command
 * name (`/bin/rm`) shortened to its name.
 */
export function denyForms(words: ShellWord[]): string[] {
  const forms = new Set<string>();
  const add = (ws: ShellWord[]) => {
    if (ws.length === 0) return;
    forms.add(text(ws));
    const plain = ws.map((word) => word.value ?? word.raw);
    forms.add(plain.join(' '));
    const name = basename(plain[0]!);
    if (name !== plain[0]) forms.add([name, ...plain.slice(1)].join(' '));
  };
  add(words);
  let i = 0;
  while (i < words.length && ASSIGNMENT.test(words[i]!.value ?? words[i]!.raw)) i++;
  add(words.slice(i));
  if (EXEC_WRAPPERS.has(basename(valueOf(words[i]) ?? '')))
    for (let j = i + 1; j < Math.min(words.length, i + 16); j++) add(words.slice(j));
  return [...forms];
}

/** For `sh -c 'text'`, `eval text`: the command text they run, when it can be read. */
export function innerCommand(words: ShellWord[]): string | null {
  const name = basename(valueOf(words[0]) ?? '');
  const values = words.slice(1).map((word) => word.value);
  if (name === 'eval') return values.every((value) => value !== null) ? values.join(' ') : null;
  if (!SHELLS.has(name)) return null;
  const flag = values.findIndex((value) => value !== null && /^-[a-z]*c[a-z]*$/.test(value));
  return flag === -1 ? null : (values[flag + 1] ?? null);
}

function basename(name: string): string {
  return name.includes('/') ? name.slice(name.lastIndexOf('/') + 1) : name;
}
