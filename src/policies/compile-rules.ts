import {
  compileCommandPattern,
  compileGlob,
  escape,
  type CommandPattern,
} from './command-pattern.js';
import { parseRule, type PolicyEffect, type PolicyRule } from './parse-rule.js';
import { compilePathPattern, type PathPattern } from './path-pattern.js';

/**
 * Rules compiled once, to decide many prompts: each rule's specifier becomes a regex, and rules
 * are grouped by effect and by the tool they name, in their given order. Deny and ask rules are
 * compiled broad and allow rules narrow (see command-pattern.ts and path-pattern.ts).
 */

export type Matcher =
  | { kind: 'tool' } // every call of the tools it names
  | { kind: 'never' } // an allow rule Claude Code skips
  | { kind: 'command'; pattern: CommandPattern | 'all' }
  | { kind: 'powershell'; pattern: CommandPattern | 'all' }
  | { kind: 'param'; name: string; value: RegExp }
  | { kind: 'path'; family: 'read' | 'edit'; pattern: PathPattern }
  | { kind: 'domain'; host: RegExp | 'all' }
  | { kind: 'name'; field: 'subagent_type' | 'skill'; pattern: CommandPattern | 'all' }
  | { kind: 'any'; of: Matcher[] }; // a deny or ask rule that reads two ways matches either

export interface CompiledRule {
  rule: PolicyRule;
  order: number;
  matcher: Matcher;
  /** The tools it applies to, or a regex over tool names for a tool-name glob. */
  tools: string[] | RegExp;
}

export interface CompiledRules {
  byEffect: Record<PolicyEffect, { byTool: Map<string, CompiledRule[]>; globs: CompiledRule[] }>;
}

export const SHELL_TOOLS = ['Bash', 'Monitor'];
export const READ_TOOLS = ['Read', 'Grep', 'Glob', 'LSP', 'LS', 'NotebookRead'];
export const EDIT_TOOLS = ['Edit', 'Write', 'MultiEdit', 'NotebookEdit'];
// The field a tool's own specifier reads; Claude Code ignores a `Tool(field:value)` rule on it.
export const PRIMARY_FIELDS: Record<string, string> = { Bash: 'command', PowerShell: 'command' };
for (const tool of ['Read', 'Edit', 'Write']) PRIMARY_FIELDS[tool] = 'file_path';
for (const tool of ['Grep', 'Glob']) PRIMARY_FIELDS[tool] = 'path';
Object.assign(PRIMARY_FIELDS, {
  Monitor: 'command',
  NotebookEdit: 'notebook_path',
  WebFetch: 'url',
});
// Tools whose specifier switchboard reads; any other tool's specifier is a parameter rule.
const SPECIFIED = new Set(['Bash', 'Monitor', 'PowerShell', 'Read', 'Edit', 'WebFetch', 'Agent']);
for (const tool of ['Task', 'Skill', 'Write', 'MultiEdit', 'NotebookEdit', 'Glob'])
  SPECIFIED.add(tool);
// Tools whose specifier also reads as a command or a name when it looks like `name:value`.
const TWO_READINGS = new Set(['Bash', 'Monitor', 'PowerShell', 'Agent', 'Task']);
const ALIASES: Record<string, string[]> = { Agent: ['Agent', 'Task'], Task: ['Agent', 'Task'] };
// A plugin's subagent is `plugin:agent`, so an Agent rule reads a parameter only by these names.
const AGENT_PARAMETERS = new Set(['description', 'prompt', 'subagent_type', 'model', 'name']);
for (const name of ['run_in_background', 'team_name', 'mode', 'isolation'])
  AGENT_PARAMETERS.add(name);
const PARAMETER = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([\s\S]*?)\s*$/;

/** Compiles every rule; throws PolicyRuleError for the first one that does not parse. */
export function compileRules(rules: PolicyRule[]): CompiledRules {
  const compiled: CompiledRules = {
    byEffect: {
      allow: { byTool: new Map(), globs: [] },
      ask: { byTool: new Map(), globs: [] },
      deny: { byTool: new Map(), globs: [] },
    },
  };
  rules.forEach((rule, order) => {
    const one = compileRule(rule, order);
    const group = compiled.byEffect[rule.effect];
    if (one.tools instanceof RegExp) group.globs.push(one);
    else
      for (const tool of one.tools) {
        const key = rule.effect === 'allow' ? tool : tool.toLowerCase();
        group.byTool.set(key, [...(group.byTool.get(key) ?? []), one]);
      }
  });
  return compiled;
}

export function compileRule(rule: PolicyRule, order: number): CompiledRule {
  const { tool, specifier } = parseRule(rule.text);
  const broad = rule.effect !== 'allow';
  const base = { rule, order };
  if (tool.includes('*')) return { ...base, ...toolGlob(tool, specifier, broad) };
  const tools = ALIASES[tool] ?? [tool];
  if (tool.startsWith('mcp__') && !tool.slice(5).includes('__') && specifier === null)
    return { ...base, matcher: { kind: 'tool' }, tools: serverTools(tool, broad) };
  if (specifier === null || (specifier.trim() === '*' && tool !== 'WebFetch'))
    return {
      ...base,
      matcher: { kind: 'tool' },
      tools: broad && tool === 'Bash' ? SHELL_TOOLS : tools,
    };
  const parameter = PARAMETER.exec(specifier);
  if (broad && parameter && parameterRule(tool, parameter[1]!)) {
    const param = paramMatcher(parameter[1]!, parameter[2]!);
    if (!TWO_READINGS.has(tool)) return { ...base, matcher: param, tools };
    // `Bash(timeout:*)` is the timeout parameter or the `timeout` command: a deny takes both.
    const own = specified(tool, tools, specifier, broad);
    return { ...base, matcher: { kind: 'any', of: [param, own.matcher] }, tools: own.tools };
  }
  if (broad && parameter && PRIMARY_FIELDS[tool] === parameter[1] && tool === 'Bash')
    return { ...base, matcher: commandMatcher(parameter[2]!, true), tools: SHELL_TOOLS };
  return { ...base, ...specified(tool, tools, specifier, broad) };
}

/** `Tool(name:value)` reads a parameter when the tool has no specifier of its own that fits. */
function parameterRule(tool: string, name: string): boolean {
  if (tool === 'WebFetch') return name !== 'domain';
  if (tool === 'Bash' || tool === 'Monitor' || tool === 'PowerShell')
    return ['timeout', 'description', 'run_in_background', 'dangerouslyDisableSandbox'].includes(
      name,
    );
  if (tool === 'Agent' || tool === 'Task') return AGENT_PARAMETERS.has(name);
  return !SPECIFIED.has(tool) || PRIMARY_FIELDS[tool] === name;
}

/** `mcp__server` is every tool of that server. */
function serverTools(tool: string, broad: boolean): RegExp {
  return new RegExp(`^${escape(tool)}(?:__[\\s\\S]*)?$`, broad ? 'i' : '');
}

function paramMatcher(name: string, value: string): Matcher {
  return { kind: 'param', name, value: compileGlob(value) };
}

function commandMatcher(specifier: string, broad: boolean, flags = ''): Matcher {
  const pattern = specifier === '*' ? 'all' : compileCommandPattern(specifier, broad, flags);
  return { kind: 'command', pattern };
}

function specified(
  tool: string,
  tools: string[],
  specifier: string,
  broad: boolean,
): Pick<CompiledRule, 'matcher' | 'tools'> {
  switch (tool) {
    case 'Bash':
      return { matcher: commandMatcher(specifier, broad), tools: SHELL_TOOLS };
    case 'Monitor':
      return { matcher: commandMatcher(specifier, broad), tools };
    case 'PowerShell': {
      if (!broad) return { matcher: { kind: 'never' }, tools };
      const pattern = specifier === '*' ? 'all' : compileCommandPattern(specifier, true, 'i');
      return { matcher: { kind: 'powershell', pattern }, tools };
    }
    case 'Read':
    case 'Glob':
      return pathRule('read', tool === 'Glob', specifier, broad);
    case 'Edit':
    case 'Write':
    case 'MultiEdit':
    case 'NotebookEdit':
      return pathRule('edit', tool !== 'Edit', specifier, broad);
    case 'WebFetch': {
      const domain = /^\s*domain\s*:\s*(.*)$/.exec(specifier);
      if (!domain) return { matcher: { kind: broad ? 'tool' : 'never' }, tools };
      const host = domain[1]!.toLowerCase().replace(/\.$/, '');
      return { matcher: { kind: 'domain', host: domainRegex(host) }, tools };
    }
    case 'Agent':
    case 'Task':
    case 'Skill': {
      const field = tool === 'Skill' ? 'skill' : 'subagent_type';
      const pattern = specifier === '*' ? 'all' : compileCommandPattern(specifier, broad);
      return { matcher: { kind: 'name', field, pattern }, tools };
    }
    default:
      // A specifier on a tool that takes none: never an allow, every call for deny and ask.
      return { matcher: { kind: broad ? 'tool' : 'never' }, tools };
  }
}

/**
 * Claude Code consults only Read and Edit path rules; a `Write(path)`, `Glob(path)`… allow is
 * skipped, as there. A deny or ask written so is taken as the Edit (Read) rule it meant.
 */
function pathRule(
  family: 'read' | 'edit',
  ignoredByClaudeCode: boolean,
  specifier: string,
  broad: boolean,
): Pick<CompiledRule, 'matcher' | 'tools'> {
  if (ignoredByClaudeCode && !broad) return { matcher: { kind: 'never' }, tools: [] };
  const tools =
    family === 'read'
      ? broad
        ? [...READ_TOOLS, 'Edit', 'Write', 'MultiEdit', ...SHELL_TOOLS]
        : READ_TOOLS
      : broad
        ? [...EDIT_TOOLS, ...SHELL_TOOLS]
        : [...EDIT_TOOLS, ...READ_TOOLS];
  return {
    matcher: { kind: 'path', family, pattern: compilePathPattern(specifier, broad) },
    tools,
  };
}

/**
 * `example.com` is that host; `*.example.com` any subdomain at any depth, not the domain itself;
 * `*` every host; any other `*` stays within one label, so `example.*` is not `example.evil.com`.
 */
function domainRegex(host: string): RegExp | 'all' {
  if (host === '*') return 'all';
  const any = host.startsWith('*.');
  const label = (text: string) =>
    text
      .split('*')
      .map((part) => part.replace(/[.\\^$+?()[\]{}|-]/g, '\\$&'))
      .join('[^.]*');
  const rest = (any ? host.slice(2) : host).split('.').map(label).join('\\.');
  return new RegExp(`^${any ? '(?:[^.]+\\.)+' : ''}${rest}$`);
}

/**
 * A glob in the tool-name position. Deny and ask rules take any (`*`, `mcp__*`); an allow rule
 * only after a literal `mcp__server__`, else Claude Code skips it and so does switchboard.
 */
function toolGlob(
  tool: string,
  specifier: string | null,
  broad: boolean,
): Pick<CompiledRule, 'matcher' | 'tools'> {
  const anchored = /^mcp__[^*]+?__/.test(tool);
  if (!broad && !anchored) return { matcher: { kind: 'never' }, tools: [] };
  const parameter = specifier === null ? null : PARAMETER.exec(specifier);
  const matcher: Matcher =
    specifier === null || specifier.trim() === '*'
      ? { kind: 'tool' }
      : broad && parameter
        ? paramMatcher(parameter[1]!, parameter[2]!)
        : { kind: broad ? 'tool' : 'never' };
  return { matcher, tools: compileGlob(tool, broad ? 'i' : '') };
}
