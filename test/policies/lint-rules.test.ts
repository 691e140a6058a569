import { expect, test } from 'vitest';
import { exportManagedSettings } from '../../src/policies/export-managed-settings.js';
import { lintRules } from '../../src/policies/lint-rules.js';
import type { PolicyEffect } from '../../src/policies/parse-rule.js';

const lint = (effect: PolicyEffect, text: string) =>
  lintRules([{ id: 7, effect, text }]).map(({ message, suggestion }) => ({ message, suggestion }));

test.each<[PolicyEffect, string, string, string]>([
  [
    'deny',
    'Write(docs/**)',
    'Claude Code never consults a Write(path) rule: only Edit(path) rules are checked for file edits',
    'write Edit(docs/**); Edit rules cover every file-editing tool',
  ],
  [
    'allow',
    'NotebookEdit(nb/**)',
    'Claude Code never consults a NotebookEdit(path) rule: only Edit(path) rules are checked for file edits',
    'write Edit(nb/**); Edit rules cover every file-editing tool',
  ],
  [
    'allow',
    'MultiEdit(src/**)',
    'Claude Code never consults a MultiEdit(path) rule: only Edit(path) rules are checked for file edits',
    'write Edit(src/**); Edit rules cover every file-editing tool',
  ],
  [
    'allow',
    'Glob(src/**)',
    'Claude Code never consults a Glob(path) rule: only Read(path) rules are checked for file reads',
    'write Read(src/**); Read rules cover Grep and Glob',
  ],
  [
    'allow',
    'mcp__*',
    'Claude Code skips an allow glob in the tool name unless it starts with a literal mcp__server__, so it allows nothing',
    'name the server, like mcp__github__*, or the tools themselves',
  ],
  [
    'allow',
    '*',
    'Claude Code skips an allow glob in the tool name unless it starts with a literal mcp__server__, so it allows nothing',
    'name the server, like mcp__github__*, or the tools themselves',
  ],
  [
    'allow',
    'mcp__gh*__get',
    'Claude Code skips an allow glob in the tool name unless it starts with a literal mcp__server__, so it allows nothing',
    'name the server, like mcp__github__*, or the tools themselves',
  ],
  [
    'deny',
    'Bash(command:rm *)',
    "Claude Code ignores a rule on Bash's command parameter (a compound command would bypass it)",
    'write Bash(rm *)',
  ],
  [
    'deny',
    'WebFetch(url:https://x)',
    "Claude Code ignores a rule on WebFetch's url parameter (a compound command would bypass it)",
    'write WebFetch(domain:host)',
  ],
  [
    'allow',
    'Agent(model:opus)',
    'an allow rule does not match parameters: Agent(model:opus) names a subagent called "model:opus"',
    'write Agent(AgentName) to allow a subagent, or use Agent(model:opus) as a deny or ask rule',
  ],
  ['allow', 'bash(ls *)', 'tool names are case-sensitive: bash is not Bash', 'write Bash'],
  [
    'allow',
    'Bash(git:* push)',
    '":*" is a wildcard only at the end of a pattern; in Bash(git:* push) it is a literal colon',
    'write Bash(git * push)',
  ],
  [
    'deny',
    'WebSearch(cats)',
    'WebSearch takes no specifier: Claude Code matches it only as a bare tool name',
    'write WebSearch',
  ],
  [
    'deny',
    'Read(/Users/alice/secrets/**)',
    'a single leading "/" is relative (to the project root), so /Users/alice/secrets/** is not an absolute path',
    'write Read(//Users/alice/secrets/**) for the absolute path',
  ],
  [
    'allow',
    'PowerShell(Get-ChildItem *)',
    'switchboard does not read PowerShell commands, so a PowerShell(…) allow rule never allows a prompt',
    'allow in Claude Code itself (export --managed-settings), or use bare PowerShell',
  ],
])('%s %s', (effect, text, message, suggestion) => {
  expect(lint(effect, text)).toEqual([{ message, suggestion }]);
});

test.each<[PolicyEffect, string]>([
  ['allow', 'Bash(npm test *)'],
  ['deny', 'Write'],
  ['deny', 'mcp__*'],
  ['deny', '*'],
  ['allow', 'mcp__github__*'],
  ['allow', 'mcp__github__get_*'],
  ['deny', 'Agent(model:opus)'],
  ['allow', 'Bash(ls:*)'],
  ['allow', 'Edit(/docs/**)'],
  ['allow', 'Read(//Users/alice/**)'],
])('no warning for %s %s', (effect, text) => {
  expect(lint(effect, text)).toEqual([]);
});

test('a warning carries the rule it is about', () => {
  expect(lintRules([{ id: 3, effect: 'deny', text: 'Glob(x/**)' }])[0]).toMatchObject({
    id: 3,
    effect: 'deny',
    text: 'Glob(x/**)',
  });
});

test('the managed-settings fragment lists each effect in order, once', () => {
  const fragment = exportManagedSettings([
    { id: 1, effect: 'allow', text: 'Bash(npm test *)' },
    { id: 2, effect: 'deny', text: 'Read(./.env)' },
    { id: 3, effect: 'allow', text: 'Read(./src/**)' },
    { id: 4, effect: 'allow', text: ' Bash(npm test *) ' },
    { id: 5, effect: 'ask', text: 'Bash(git push *)' },
  ]);
  expect(fragment).toEqual({
    permissions: {
      allow: ['Bash(npm test *)', 'Read(./src/**)'],
      ask: ['Bash(git push *)'],
      deny: ['Read(./.env)'],
    },
  });
  expect(JSON.parse(JSON.stringify(fragment))).toEqual(fragment);
  expect(exportManagedSettings([])).toEqual({ permissions: { allow: [], ask: [], deny: [] } });
  expect(() => exportManagedSettings([{ id: 1, effect: 'deny', text: 'Bash(' }])).toThrow(
    'must end with ")"',
  );
});
