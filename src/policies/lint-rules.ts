import { PRIMARY_FIELDS } from './compile-rules.js';
import { parseRule, type PolicyEffect } from './parse-rule.js';

/**
 * The rules Claude Code itself ignores or warns about at startup (its errors reference, "Is not
 * matched by file permission checks", and its permissions reference), and the few that
 * switchboard reads differently: each with why, and what to write instead.
 */

export interface LintWarning {
  id?: number;
  text: string;
  effect: PolicyEffect;
  /** One line: what is wrong with the rule. */
  message: string;
  /** What to write instead. */
  suggestion: string;
}

type LintInput = { id?: number; text: string; effect: PolicyEffect };

const KNOWN_TOOLS = ['Bash', 'Read', 'Edit', 'Write', 'Glob', 'Grep', 'WebFetch', 'WebSearch'];
KNOWN_TOOLS.push('Agent', 'Task', 'Skill', 'NotebookEdit', 'MultiEdit', 'Monitor', 'PowerShell');
const BARE_ONLY = new Set(['WebSearch', 'ExitPlanMode', 'EnterPlanMode', 'TodoWrite', 'LSP']);
const ABSOLUTE_LOOKING = /^\/(Users|home|etc|tmp|var|usr|opt|root|private|Volumes|mnt)(\/|$)/;

/** Warnings for the rules, in their order; a rule that does not parse throws PolicyRuleError. */
export function lintRules(rules: LintInput[]): LintWarning[] {
  return rules.flatMap((rule) => {
    const warn = (message: string, suggestion: string): LintWarning => ({
      ...(rule.id === undefined ? {} : { id: rule.id }),
      text: rule.text,
      effect: rule.effect,
      message,
      suggestion,
    });
    return checks(rule, warn);
  });
}

function checks(rule: LintInput, warn: (m: string, s: string) => LintWarning): LintWarning[] {
  const { tool, specifier } = parseRule(rule.text);
  const out: LintWarning[] = [];
  const spec = specifier ?? '';
  if (specifier !== null && ['Write', 'NotebookEdit', 'MultiEdit'].includes(tool))
    out.push(
      warn(
        `Claude Code never consults a ${tool}(path) rule: only Edit(path) rules are checked for file edits`,
        `write Edit(${spec}); Edit rules cover every file-editing tool`,
      ),
    );
  if (specifier !== null && tool === 'Glob')
    out.push(
      warn(
        'Claude Code never consults a Glob(path) rule: only Read(path) rules are checked for file reads',
        `write Read(${spec}); Read rules cover Grep and Glob`,
      ),
    );
  if (rule.effect === 'allow' && tool.includes('*') && !/^mcp__[^*]+?__/.test(tool))
    out.push(
      warn(
        'Claude Code skips an allow glob in the tool name unless it starts with a literal mcp__server__, so it allows nothing',
        'name the server, like mcp__github__*, or the tools themselves',
      ),
    );
  const parameter = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:/.exec(spec);
  if (parameter && PRIMARY_FIELDS[tool] === parameter[1])
    out.push(
      warn(
        `Claude Code ignores a rule on ${tool}'s ${parameter[1]} parameter (a compound command would bypass it)`,
        tool === 'WebFetch'
          ? 'write WebFetch(domain:host)'
          : `write ${tool}(${spec.slice(spec.indexOf(':') + 1).trim()})`,
      ),
    );
  if (rule.effect === 'allow' && parameter && ['Agent', 'Task'].includes(tool))
    out.push(
      warn(
        `an allow rule does not match parameters: ${rule.text} names a subagent called "${spec.trim()}"`,
        `write ${tool}(AgentName) to allow a subagent, or use ${rule.text} as a deny or ask rule`,
      ),
    );
  out.push(...shapeChecks(rule, tool, spec, specifier !== null, warn));
  return out;
}

function shapeChecks(
  rule: LintInput,
  tool: string,
  spec: string,
  specified: boolean,
  warn: (m: string, s: string) => LintWarning,
): LintWarning[] {
  const out: LintWarning[] = [];
  const known = KNOWN_TOOLS.find((name) => name.toLowerCase() === tool.toLowerCase());
  if (known && known !== tool)
    out.push(warn(`tool names are case-sensitive: ${tool} is not ${known}`, `write ${known}`));
  if ((tool === 'Bash' || tool === 'PowerShell') && /:\*./.test(spec))
    out.push(
      warn(
        `":*" is a wildcard only at the end of a pattern; in ${rule.text} it is a literal colon`,
        `write ${tool}(${spec.replace(/:\*/g, ' *')})`,
      ),
    );
  if (specified && BARE_ONLY.has(tool))
    out.push(
      warn(
        `${tool} takes no specifier: Claude Code matches it only as a bare tool name`,
        `write ${tool}`,
      ),
    );
  if (specified && ['Read', 'Edit'].includes(tool) && ABSOLUTE_LOOKING.test(spec))
    out.push(
      warn(
        `a single leading "/" is relative (to the project root), so ${spec} is not an absolute path`,
        `write ${tool}(/${spec}) for the absolute path`,
      ),
    );
  if (specified && tool === 'PowerShell' && rule.effect === 'allow')
    out.push(
      warn(
        'switchboard does not read PowerShell commands, so a PowerShell(…) allow rule never allows a prompt',
        'allow in Claude Code itself (export --managed-settings), or use bare PowerShell',
      ),
    );
  return out;
}
