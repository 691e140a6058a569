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
  if (prompt.path !== 'channel')
    return { tool, input: prompt.input, fragments: {}, lossy: null, fromPreview: false, anchors };
  return { tool, ...readPreview(prompt.preview), fromPreview: true, anchors };
}

function absolute(dir: string | null | undefined): string | null {
  return typeof dir === 'string' && dir.startsWith('/') ? dir.replace(/\/+$/, '') || '/' : null;
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

const FILE_READERS = new Set(['cat', 'head', 'tail', 'sed']);

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
    for (const file of readFiles(words)) pushTarget(view.reads, file, anchors);
    const inner = innerCommand(words);
    if (inner !== null && depth < 3) addAnalysis(view, anchors, splitCommand(inner), depth + 1);
  }
}

function pushTarget(list: TargetPath[], value: string, anchors: Anchors): void {
  const target = resolveTarget(value, anchors);
  if (target) list.push(target);
}

/** The files `cat`, `head`, `tail` and `sed` read, as far as their words say (for deny rules). */
function readFiles(words: ShellWord[]): string[] {
  const name = words[0]?.value ?? '';
  if (!FILE_READERS.has(name.slice(name.lastIndexOf('/') + 1))) return [];
  const args = words.slice(1).map((word) => word.value ?? word.raw);
  const operands = args.filter((arg) => !arg.startsWith('-'));
  const script =
    name.endsWith('sed') && !args.some((arg) => /^-(e|f)|^--(expression|file)/.test(arg));
  return script ? operands.slice(1) : operands;
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
