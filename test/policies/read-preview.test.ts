import { expect, test } from 'vitest';
import { readPreview } from '../../src/policies/read-preview.js';

test('an intact preview in either rendering reads back as its fields', () => {
  const input = { command: 'npm test', description: 'Run  the tests', timeout: 5000 };
  expect(readPreview(JSON.stringify(input))).toEqual({ input, fragments: {}, lossy: null });
  expect(
    readPreview('{ "command": "npm test", "description": "Run the tests", "timeout": 5000 }'),
  ).toEqual({
    input: { command: 'npm test', description: 'Run the tests', timeout: 5000 },
    fragments: {},
    lossy: null,
  });
  expect(readPreview('{  }').lossy).toBeNull();
});

test('a shortened value keeps its visible start and end', () => {
  const reading = readPreview(
    '{ "command": "git push \n⋯ 1234 code points elided ⋯\n origin main", "d": "x" }',
  );
  expect(reading).toEqual({
    input: { d: 'x' },
    fragments: { command: ['git push', 'origin main'] },
    lossy: 'the preview was shortened by Claude Code',
  });
});

test('regression: a shortened value whose marker left the JSON valid read as whole', () => {
  const reading = readPreview('{ "command": "echo aaa ⋯ 3990 code points elided ⋯ bbb" }');
  expect(reading.lossy).toBe('the preview was shortened by Claude Code');
  expect(reading.input).toEqual({});
  expect(reading.fragments.command).toEqual(['echo aaa', 'bbb']);
});

test.each([
  ['{ "command": "deploy --token [REDACTED]" }', 'Claude Code masked a credential in the preview'],
  ['{ "rows": "(value unserializable)" }', 'Claude Code could not serialise the preview'],
  ['{"command":"npm test xxxxxxxxxxxxxxxx…', 'the preview was shortened by Claude Code'],
  ['npm test', 'the preview is not in the shape Claude Code renders'],
  ['["npm test"]', 'the preview is not in the shape Claude Code renders'],
  ['{ "a": 1, "a": 2 }', 'the preview is not in the shape Claude Code renders'],
  ['{"command": "ls"}', 'the preview is not in the shape Claude Code renders'],
])('%j is lossy', (preview, lossy) => {
  expect(readPreview(preview).lossy).toBe(lossy);
});

test('a preview that does not parse still shows the start of its command to deny rules', () => {
  expect(readPreview('{"command":"rm -rf /home/u/wor…').fragments).toEqual({
    command: ['rm -rf /home/u/wor'],
  });
});
