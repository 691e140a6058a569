/**
 * Decides a permission prompt by a team's policy rules, the way Claude Code decides by its own
 * permission rules, and more cautiously where switchboard sees less than Claude Code does.
 *
 * Sources, read for Claude Code 2.1.x (the 2026-08 copy of code.claude.com/docs/en/…):
 * permissions (rule syntax, precedence, Bash wildcards and wrappers, Read/Edit path patterns,
 * WebFetch domains, MCP names, tool-name globs, parameter rules), tools-reference (which tools
 * each rule covers), hooks (tool input fields), channels-reference (`input_preview`: elided,
 * masked, unserialisable values), errors ("Is not matched by file permission checks"),
 * managed-settings (`managed-settings.d`), and changelog (whitespace between words, deny rules
 * through `env`/`sudo`/`watch`, `find -exec`, safe variables). Where they are silent the reading
 * is the safe one: deny broadly, allow narrowly.
 *
 * Precedence is deny, then ask, then allow; the first matching rule in the given order wins
 * within each. Deny and ask rules match if any part of a command, anything nested in it, or any
 * file it names matches; an allow needs every part of a command allowed. Nothing that cannot be
 * read whole is allowed: see docs/policies.md for the full list and the readings chosen where
 * Claude Code's documentation is silent.
 */
import { neutraliseLine } from '../contract/neutralise-text.js';
import {
  fetchHost,
  fileTargets,
  viewCall,
  viewShell,
  type CallView,
  type FileTarget,
  type PermissionPrompt,
  type ShellView,
} from './call-view.js';
import { allowForms, text } from './command-forms.js';
import {
  SHELL_TOOLS,
  type CompiledRule,
  type CompiledRules,
  type Matcher,
} from './compile-rules.js';
import type { PolicyEffect } from './parse-rule.js';
import { anchorOf, below, matchesPath, type PathPattern, type TargetPath } from './path-pattern.js';

export type { PermissionPrompt } from './call-view.js';

export interface PolicyDecision {
  /** `ask` sends the prompt to the humans. */
  effect: PolicyEffect;
  rule?: { id: number; text: string; effect: PolicyEffect };
  reason: string;
}

interface Decider {
  compiled: CompiledRules;
  call: CallView;
  shell: ShellView | null;
  files: FileTarget[];
}

export function decide(compiled: CompiledRules, prompt: PermissionPrompt): PolicyDecision {
  const call = viewCall(prompt);
  const shell = SHELL_TOOLS.includes(call.tool) ? viewShell(call) : null;
  const decider: Decider = { compiled, call, shell, files: fileTargets(call) };
  for (const effect of ['deny', 'ask'] as const) {
    const hit = candidates(compiled, effect, call.tool).find((one) => matchesBroad(decider, one));
    if (hit) return decision(hit, `matches ${effect} rule ${hit.rule.text}`);
  }
  if (call.lossy !== null) return ask(`${call.lossy}, so it is never allowed automatically`);
  return shell ? allowShell(decider, shell) : allowCall(decider);
}

function decision(hit: CompiledRule, reason: string, effect = hit.rule.effect): PolicyDecision {
  const { id, text, effect: ruleEffect } = hit.rule;
  return { effect, rule: { id, text, effect: ruleEffect }, reason: neutraliseLine(reason, 300) };
}

function ask(reason: string): PolicyDecision {
  return { effect: 'ask', reason: neutraliseLine(reason, 300) };
}

/** The rules of one effect that name this tool, in their given order. */
function candidates(compiled: CompiledRules, effect: PolicyEffect, tool: string): CompiledRule[] {
  const group = compiled.byEffect[effect];
  const named = group.byTool.get(effect === 'allow' ? tool : tool.toLowerCase()) ?? [];
  const globs = group.globs.filter((one) => (one.tools as RegExp).test(tool));
  if (globs.length === 0) return named;
  return [...named, ...globs].sort((a, b) => a.order - b.order);
}

/** Deny and ask rules: any part, any nested command, any file named. */
function matchesBroad(decider: Decider, one: CompiledRule): boolean {
  const { call, shell } = decider;
  const m = one.matcher;
  switch (m.kind) {
    case 'tool':
      return true;
    case 'never':
      return false;
    case 'command':
      if (m.pattern === 'all') return true;
      return shell !== null && commandMatches(m.pattern, shell);
    case 'powershell': {
      const command = call.input.command;
      if (typeof command !== 'string') return false;
      if (m.pattern === 'all') return true;
      const pattern = m.pattern;
      return [command, ...command.split(/[;|&\n]+/)].some((part) =>
        pattern.regex.test(part.trim()),
      );
    }
    case 'any':
      return m.of.some((matcher) => matchesBroad(decider, { ...one, matcher }));
    case 'param': {
      const value = Object.hasOwn(call.input, m.name) ? call.input[m.name] : undefined;
      return ['string', 'number', 'boolean'].includes(typeof value) && m.value.test(String(value));
    }
    case 'path':
      return broadPathTargets(decider, m.family).some(({ target, directory }) =>
        directory
          ? matchesPath(m.pattern, target, call.anchors) ||
            matchesPath(m.pattern, child(target), call.anchors)
          : matchesPath(m.pattern, target, call.anchors),
      );
    case 'domain': {
      const host = fetchHost(call);
      return m.host === 'all' || (host !== null && m.host.test(host));
    }
    case 'name':
      return nameTexts(call, m.field, true).some(
        (name) => m.pattern === 'all' || m.pattern.regex.test(name),
      );
  }
}

function commandMatches(pattern: { regex: RegExp; firstWord: string | null }, shell: ShellView) {
  const texts = pattern.firstWord === null ? shell.texts : shell.byFirstWord.get(pattern.firstWord);
  return (texts ?? []).some((text) => pattern.regex.test(text));
}

function broadPathTargets(decider: Decider, family: 'read' | 'edit') {
  const found: { target: TargetPath; directory: boolean }[] = [];
  for (const file of decider.files) {
    if (file.target === null) continue;
    if (file.access === family || (family === 'read' && file.readDeniable))
      found.push({ target: file.target, directory: file.directory });
  }
  const shell = decider.shell;
  if (shell) {
    for (const target of shell.writes) found.push({ target, directory: false });
    if (family === 'read')
      for (const target of shell.reads) found.push({ target, directory: false });
  }
  return found;
}

/** A path standing for any file inside a directory. */
function child(target: TargetPath, depth = 1): TargetPath {
  return { ...target, path: `${target.path.replace(/\/+$/, '')}${'/\u0001'.repeat(depth)}` };
}

function nameTexts(call: CallView, field: 'subagent_type' | 'skill', broad: boolean): string[] {
  const value = call.input[field] ?? (field === 'subagent_type' ? 'general-purpose' : undefined);
  if (typeof value !== 'string') return [];
  const args = call.input.args;
  const withArgs = typeof args === 'string' && args !== '' ? `${value} ${args}` : value;
  return broad ? [value, withArgs] : [withArgs];
}

/** A Bash call is allowed only when read whole and every part matches an allow rule. */
function allowShell(decider: Decider, shell: ShellView): PolicyDecision {
  const rules = candidates(decider.compiled, 'allow', decider.call.tool);
  const analysis = shell.analysis;
  if (analysis === null) {
    // A Monitor watching a WebSocket runs no command: only a bare Monitor rule covers it.
    const bare = rules.find((one) => one.matcher.kind === 'tool');
    const watch = decider.call.tool === 'Monitor' && decider.call.input.command === undefined;
    return bare && watch
      ? decision(bare, `matches allow rule ${bare.rule.text}`)
      : ask('no command to read');
  }
  if (analysis.problem !== null) return ask(`${analysis.problem} is never allowed automatically`);
  if (decider.call.fromPreview && analysis.quotedOperator)
    return ask(
      'a shell operator inside quotes in a preview is never allowed automatically (Claude Code rewrites quote look-alikes there)',
    );
  if (analysis.commands.length === 0) return ask('an empty command is never allowed automatically');
  let first: CompiledRule | null = null;
  for (const words of analysis.commands) {
    const forms = allowForms(words);
    const texts = forms.texts.map((text) => ({ text, first: text.split(' ', 1)[0]! }));
    const hit = rules.find((one) => allowsCommand(one.matcher, texts, forms.exactOnly));
    if (!hit) {
      const part = clip(text(words));
      const wrapped = forms.exactOnly
        ? ' (it runs another command, so only an exact rule allows it)'
        : '';
      if (analysis.commands.length === 1) return ask(`no rule matches${wrapped}`);
      return ask(`compound command part \`${part}\` matches no allow rule${wrapped}`);
    }
    first ??= hit;
  }
  const reason =
    analysis.commands.length === 1
      ? `matches allow rule ${first!.rule.text}`
      : `every part of the compound command matches an allow rule, the first ${first!.rule.text}`;
  return decision(first!, reason);
}

function allowsCommand(
  m: Matcher,
  texts: { text: string; first: string }[],
  exactOnly: boolean,
): boolean {
  if (m.kind === 'tool') return true;
  if (m.kind !== 'command') return false;
  if (m.pattern === 'all') return !exactOnly;
  const pattern = m.pattern;
  if (exactOnly && pattern.wildcard) return false;
  return texts.some(
    ({ text, first }) =>
      (pattern.firstWord === null || first === pattern.firstWord) && pattern.regex.test(text),
  );
}

/** Any other tool: the first allow rule that covers the whole call. */
function allowCall(decider: Decider): PolicyDecision {
  const { call } = decider;
  const rules = candidates(decider.compiled, 'allow', call.tool);
  let pathRuleSkipped = false;
  for (const one of rules) {
    const m = one.matcher;
    if (m.kind === 'path' && call.anchors.cwd === null) {
      pathRuleSkipped = true;
      continue;
    }
    if (allowsCall(decider, m)) return decision(one, `matches allow rule ${one.rule.text}`);
  }
  if (pathRuleSkipped)
    return ask('no working directory is known, so no path rule is used to allow it');
  const searched = decider.files.find((file) => file.directory && file.target !== null);
  if (
    searched &&
    rules.some((one) => one.matcher.kind === 'path' && allowsCall(decider, one.matcher, false))
  )
    return ask(
      `a deny or ask rule could match a file the search under ${searched.target!.path} reads`,
    );
  return ask('no rule matches');
}

function allowsCall(decider: Decider, m: Matcher, checkInside = true): boolean {
  const { call } = decider;
  switch (m.kind) {
    case 'tool':
      return true;
    case 'path':
      return (
        decider.files.length > 0 &&
        decider.files.every((file) => allowsFile(decider, m.pattern, m.family, file, checkInside))
      );
    case 'domain': {
      const host = fetchHost(call);
      return host !== null && (m.host === 'all' || m.host.test(host));
    }
    case 'name':
      return nameTexts(call, m.field, false).some(
        (name) => m.pattern === 'all' || m.pattern.regex.test(name),
      );
    default:
      return false;
  }
}

function allowsFile(
  decider: Decider,
  pattern: PathPattern,
  family: 'read' | 'edit',
  file: FileTarget,
  checkInside: boolean,
): boolean {
  const { call } = decider;
  if (file.target === null || (file.access === 'edit' && family !== 'edit')) return false;
  if (!file.directory) return matchesPath(pattern, file.target, call.anchors);
  if (call.tool === 'Glob' && !safeGlob(call.input.pattern)) return false;
  const covered =
    (call.tool === 'Grep' && matchesPath(pattern, file.target, call.anchors)) ||
    (matchesPath(pattern, child(file.target), call.anchors) &&
      matchesPath(pattern, child(file.target, 2), call.anchors));
  return covered && (!checkInside || !restrictedInside(decider, file.target));
}

/** A Glob pattern that stays under its directory. */
function safeGlob(pattern: unknown): boolean {
  return (
    typeof pattern === 'string' &&
    !pattern.startsWith('/') &&
    !pattern.startsWith('~') &&
    !pattern.split('/').includes('..')
  );
}

/**
 * Whether a Read deny or ask rule could match some file under a searched directory: a search
 * reads every file there, so it is not allowed past such a rule (Claude Code filters the results
 * by its own rules only).
 */
function restrictedInside(decider: Decider, directory: TargetPath): boolean {
  for (const effect of ['deny', 'ask'] as const) {
    for (const one of candidates(decider.compiled, effect, 'Read')) {
      if (one.matcher.kind !== 'path') continue;
      const anchor = anchorOf(one.matcher.pattern, decider.call.anchors);
      if (anchor === null || !directory.absolute) return true;
      const base =
        one.matcher.pattern.base === ''
          ? anchor
          : `${anchor.replace(/\/$/, '')}/${one.matcher.pattern.base}`;
      if (below(base, directory.path, true) !== null || below(directory.path, base, true) !== null)
        return true;
    }
  }
  return false;
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
