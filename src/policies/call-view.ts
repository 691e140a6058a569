import { denyForms, innerCommand } from './command-forms.js';
import { resolveTarget, type Anchors, type TargetPath } from './path-pattern.js';
import { readPreview } from './read-preview.js';
import { splitCommand, type ShellAnalysis, type ShellWord } from './split-command.js';

/**
 * A permission prompt as it reaches switchboard: from the `approval_prompt` tool of a headless
 * session and from the PermissionRequest hook with the tool's raw input; from a channel's
 * relayed `permission_request` with only Claude Code's display text of it.
 */
export type PermissionPrompt = {
  tool_name: string;
  /** The session's working directory, when known; the channel's preview carries none. */
  cwd?: string | null;
  /** The session's home directory, for `~/` rules, when known. */
  home?: string | null;
} & (
  { path: 'tool' | 'hook'; input: Record<string, unknown> } | { path: 'channel'; preview: string }
);

export interface FileTarget {
  target: TargetPath | null;
  access: 'read' | 'edit';
  /** A search over a directory (Grep, Glob, LS) rather than one file. */
  directory: boolean;
  /** Read deny rules also cover it (Edit, Write: they change what Claude must read back). */
  readDeniable: boolean;
}

export interface CallView {
  tool: string;
  input: Record<string, unknown>;
  fragments: Record<string, string[]>;
  lossy: string | null;
  fromPreview: boolean;
  anchors: Anchors;
}

export function viewCall(prompt: PermissionPrompt): CallView {
  const anchors = { cwd: absolute(prompt.cwd), home: absolute(prompt.home) };
  const tool = prompt.tool_name;
  if (prompt.path !== 'channel') {
    const input = prompt.input !== null && typeof prompt.input === 'object' ? prompt.input : {};
    return { tool, input, fragments: {}, lossy: null, fromPreview: false, anchors };
  }
  return { tool, ...readPreview(prompt.preview), fromPreview: true, anchors };
}

/** A directory as an absolute POSIX path (a Windows `C:\\p` is `/c/p`), or null. */
function absolute(dir: string | null | undefined): string | null {
  if (typeof dir !== 'string') return null;
  const target = resolveTarget(dir, { cwd: null, home: null });
  return target?.absolute ? target.path.replace(/\/+$/, '') || '/' : null;
}

export interface ShellView {
  /** The whole command read, or null when there is none or only its fragments. */
  analysis: ShellAnalysis | null;
  /** The texts deny and ask rules are tried against, by their first word. */
  byFirstWord: Map<string, string[]>;
  texts: string[];
  /** Files the command writes through redirections, and reads through `cat`, `head`, … */
  writes: TargetPath[];
  reads: TargetPath[];
}

// Commands whose operands are files they read or write, for deny and ask rules on paths. The
// documentation names cat, head, tail and sed; the others are of the same kind.
const READERS = new Set(['cat', 'head', 'tail', 'less', 'more', 'nl', 'tac', 'xxd', 'od', 'wc']);
for (const name of ['strings', 'base64', 'sort', 'uniq', 'cut', 'diff', 'cmp']) READERS.add(name);
const SCRIPTED = new Set(['sed', 'grep', 'egrep', 'rg', 'awk']); // the first operand is no file
const WRITERS = new Set(['tee', 'touch', 'rm', 'rmdir', 'mkdir', 'truncate', 'shred']);
const COPIERS = new Set(['cp', 'mv', 'ln', 'install', 'rsync']); // read all, write the last

export function viewShell(call: CallView): ShellView {
  const command = call.input.command;
  const analysis = typeof command === 'string' ? splitCommand(command) : null;
  const view: ShellView = { analysis, byFirstWord: new Map(), texts: [], writes: [], reads: [] };
  const sources = analysis ? [command as string] : (call.fragments.command ?? []);
  for (const source of sources) addAnalysis(view, call.anchors, splitCommand(source), 0);
  for (const text of view.texts) {
    const first = text.split(' ', 1)[0]!;
    view.byFirstWord.set(first, [...(view.byFirstWord.get(first) ?? []), text]);
  }
  return view;
}

function addAnalysis(view: ShellView, anchors: Anchors, analysis: ShellAnalysis, depth: number) {
  for (const write of analysis.writes) pushTarget(view.writes, write, anchors);
  for (const words of [...analysis.commands, ...analysis.nested]) {
    view.texts.push(...denyForms(words));
    const files = namedFiles(words);
    for (const file of files.reads) pushTarget(view.reads, file, anchors);
    for (const file of files.writes) pushTarget(view.writes, file, anchors);
    const inner = innerCommand(words);
    if (inner !== null && depth < 3) addAnalysis(view, anchors, splitCommand(inner), depth + 1);
  }
}

function pushTarget(list: TargetPath[], value: string, anchors: Anchors): void {
  const target = resolveTarget(value, anchors);
  if (target) list.push(target);
}

/** The files a file command reads and writes, as far as its words say (for deny rules). */
function namedFiles(words: ShellWord[]): { reads: string[]; writes: string[] } {
  const path = words[0]?.value ?? '';
  const name = path.slice(path.lastIndexOf('/') + 1);
  const args = words.slice(1).map((word) => word.value ?? word.raw);
  const operands = args.filter((arg) => !arg.startsWith('-'));
  const inPlace = args.some((arg) => /^-i|^--in-place/.test(arg));
  if (SCRIPTED.has(name)) {
    const script = !args.some((arg) => /^-(e|f)|^--(expression|file|regexp)/.test(arg));
    const files = script ? operands.slice(1) : operands;
    return { reads: files, writes: name === 'sed' && inPlace ? files : [] };
  }
  if (READERS.has(name)) return { reads: operands, writes: [] };
  if (WRITERS.has(name)) return { reads: [], writes: operands };
  if (COPIERS.has(name)) return { reads: operands, writes: operands.slice(-1) };
  return { reads: [], writes: [] };
}

/** The files or directories a file tool reads or edits. */
export function fileTargets(call: CallView): FileTarget[] {
  const { input, anchors } = call;
  const file = (value: unknown, access: 'read' | 'edit', readDeniable = false): FileTarget => ({
    target: resolveTarget(value, anchors),
    access,
    directory: false,
    readDeniable,
  });
  const directory = (value: unknown): FileTarget => ({
    target: resolveTarget(value ?? '.', anchors),
    access: 'read',
    directory: true,
    readDeniable: false,
  });
  switch (call.tool) {
    case 'Read':
      return [file(input.file_path, 'read')];
    case 'LSP':
      return [file(input.file_path ?? input.filePath, 'read')];
    case 'NotebookRead':
      return [file(input.notebook_path, 'read')];
    case 'Edit':
    case 'Write':
    case 'MultiEdit':
      return [file(input.file_path, 'edit', true)];
    case 'NotebookEdit':
      return [file(input.notebook_path, 'edit')];
    case 'Grep':
    case 'Glob':
    case 'LS':
      return [directory(input.path)];
    default:
      return [];
  }
}

/** The host a WebFetch call fetches, from its URL (or the start a shortened preview kept). */
export function fetchHost(call: CallView): string | null {
  const url = typeof call.input.url === 'string' ? call.input.url : call.fragments.url?.[0];
  if (url === undefined) return null;
  try {
    return new URL(url).hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return null;
  }
}
