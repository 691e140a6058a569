/**
 * A policy rule is written in Claude Code's own permission-rule syntax, `Tool` or
 * `Tool(specifier)` (see docs/policies.md for what each form matches). Parsing only checks the
 * shape, so a CLI or HTTP adapter can refuse a malformed rule with one line before it is stored;
 * what a specifier means is decided when the rule is compiled (compile-rules.ts).
 */

export type PolicyEffect = 'allow' | 'ask' | 'deny';

/** A stored rule as the matcher receives it: its id, its text and what it does. */
export interface PolicyRule {
  id: number;
  text: string;
  effect: PolicyEffect;
}

export interface ParsedRule {
  /** The tool-name position: `Bash`, `mcp__github__*`, `*`. */
  tool: string;
  /** What stood between the parentheses, or null for a bare tool name. */
  specifier: string | null;
}

/** A rule that is not in Claude Code's shape; the message is one line a CLI can print. */
export class PolicyRuleError extends Error {
  override readonly name = 'PolicyRuleError';
  readonly code = 'invalid';
}

// Claude Code's canonical tool names and MCP names (`mcp__server__tool`, normalised by Claude Code
// to letters, digits, `_` and `-`), plus `*` for the tool-name globs that deny and ask rules take.
const TOOL = /^[A-Za-z0-9_*-]+$/;
const RULE_MAX = 4_000;

export function parseRule(text: string): ParsedRule {
  const rule = text.trim();
  const quoted = JSON.stringify(rule.length > 80 ? `${rule.slice(0, 77)}...` : rule);
  if (rule === '')
    throw new PolicyRuleError('a rule cannot be empty: write Tool or Tool(specifier)');
  if (rule.length > RULE_MAX)
    throw new PolicyRuleError(`a rule is at most ${RULE_MAX} characters, not ${rule.length}`);
  const open = rule.indexOf('(');
  if (open === -1) {
    if (rule.includes(')')) throw new PolicyRuleError(`unbalanced parentheses in ${quoted}`);
    checkTool(rule, quoted);
    return { tool: rule, specifier: null };
  }
  if (!rule.endsWith(')'))
    throw new PolicyRuleError(`${quoted} must end with ")": write Tool(specifier)`);
  const tool = rule.slice(0, open);
  const specifier = rule.slice(open + 1, -1);
  checkTool(tool, quoted);
  if (!balanced(specifier)) throw new PolicyRuleError(`unbalanced parentheses in ${quoted}`);
  if (specifier.trim() === '')
    throw new PolicyRuleError(
      `empty specifier in ${quoted}: write ${tool} alone to match every use of the tool`,
    );
  checkSpecifier(tool, specifier, quoted);
  return { tool, specifier };
}

function checkTool(tool: string, quoted: string): void {
  if (tool === '') throw new PolicyRuleError(`${quoted} names no tool: write Tool(specifier)`);
  if (!TOOL.test(tool))
    throw new PolicyRuleError(
      `${quoted}: a tool name is letters, digits, "_", "-" and "*", like Bash or mcp__github__*`,
    );
  if (tool.startsWith('mcp__') && (/^mcp___|__$/.test(tool) || tool === 'mcp__'))
    throw new PolicyRuleError(`${quoted}: an MCP rule is mcp__server or mcp__server__tool`);
}

/** Parentheses in a specifier pair up (a `\(` or `\)` is a literal one). */
function balanced(specifier: string): boolean {
  let depth = 0;
  for (let i = 0; i < specifier.length; i++) {
    const c = specifier[i];
    if (c === '\\') i++;
    else if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

const DOMAIN = /^(\*|(\*\.)?[A-Za-z0-9*_-]+(\.[A-Za-z0-9*_-]+)*\.?)$/;

function checkSpecifier(tool: string, specifier: string, quoted: string): void {
  if (tool !== 'WebFetch') return;
  const match = /^\s*domain\s*:\s*(.*)$/.exec(specifier);
  if (match) {
    if (!DOMAIN.test(match[1]!))
      throw new PolicyRuleError(`${quoted}: write WebFetch(domain:example.com) or *.example.com`);
    return;
  }
  if (!/^\s*[A-Za-z_][A-Za-z0-9_]*\s*:/.test(specifier))
    throw new PolicyRuleError(`${quoted}: a WebFetch rule is WebFetch(domain:example.com)`);
}
