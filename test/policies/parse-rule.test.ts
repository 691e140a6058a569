import { expect, test } from 'vitest';
import { compileRules } from '../../src/policies/compile-rules.js';
import { parseRule, PolicyRuleError } from '../../src/policies/parse-rule.js';

test.each([
  ['Bash', { tool: 'Bash', specifier: null }],
  ['Bash(npm test *)', { tool: 'Bash', specifier: 'npm test *' }],
  ['  Read(./src/**)  ', { tool: 'Read', specifier: './src/**' }],
  ['Bash(find . \\( -name x \\))', { tool: 'Bash', specifier: 'find . \\( -name x \\)' }],
  ['Bash(echo (a) (b))', { tool: 'Bash', specifier: 'echo (a) (b)' }],
  ['WebFetch(domain:*.example.com)', { tool: 'WebFetch', specifier: 'domain:*.example.com' }],
  ['mcp__github', { tool: 'mcp__github', specifier: null }],
  ['mcp__github__*', { tool: 'mcp__github__*', specifier: null }],
  [
    'mcp__my-server__create-pull-request',
    { tool: 'mcp__my-server__create-pull-request', specifier: null },
  ],
  ['*', { tool: '*', specifier: null }],
  ['Agent(model:opus)', { tool: 'Agent', specifier: 'model:opus' }],
])('parses %j', (text, parsed) => {
  expect(parseRule(text)).toEqual(parsed);
});

test.each([
  ['', 'a rule cannot be empty: write Tool or Tool(specifier)'],
  ['Bash(npm test', '"Bash(npm test" must end with ")": write Tool(specifier)'],
  ['Bash(a))', 'unbalanced parentheses in "Bash(a))"'],
  ['Bash)', 'unbalanced parentheses in "Bash)"'],
  ['Bash(x)y', '"Bash(x)y" must end with ")": write Tool(specifier)'],
  ['Bash()', 'empty specifier in "Bash()": write Bash alone to match every use of the tool'],
  ['Bash(  )', 'empty specifier in "Bash(  )": write Bash alone to match every use of the tool'],
  ['(npm test)', '"(npm test)" names no tool: write Tool(specifier)'],
  [
    'Ba sh',
    '"Ba sh": a tool name is letters, digits, "_", "-" and "*", like Bash or mcp__github__*',
  ],
  ['mcp__', '"mcp__": an MCP rule is mcp__server or mcp__server__tool'],
  ['mcp__github__', '"mcp__github__": an MCP rule is mcp__server or mcp__server__tool'],
  [
    'WebFetch(example.com)',
    '"WebFetch(example.com)": a WebFetch rule is WebFetch(domain:example.com)',
  ],
  ['WebFetch(domain:)', '"WebFetch(domain:)": write WebFetch(domain:example.com) or *.example.com'],
  [
    'WebFetch(domain:exa mple.com)',
    '"WebFetch(domain:exa mple.com)": write WebFetch(domain:example.com) or *.example.com',
  ],
  [`Bash(${'x'.repeat(5000)})`, 'a rule is at most 4000 characters, not 5006'],
])('refuses %j with one line', (text, message) => {
  expect(() => parseRule(text)).toThrow(new PolicyRuleError(message));
  try {
    parseRule(text);
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyRuleError);
    expect((error as PolicyRuleError).code).toBe('invalid');
    expect((error as Error).message).not.toContain('\n');
  }
});

test('compiling refuses the first malformed rule, naming it', () => {
  expect(() =>
    compileRules([
      { id: 1, effect: 'allow', text: 'Bash(ls *)' },
      { id: 2, effect: 'deny', text: 'Read(' },
    ]),
  ).toThrow('"Read(" must end with ")": write Tool(specifier)');
});
