import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { expect, test } from 'vitest';
import { splitCommand } from '../../src/policies/split-command.js';

const words = (command: string) => {
  const analysis = splitCommand(command);
  return {
    commands: analysis.commands.map((ws) => ws.map((w) => w.raw).join(' ')),
    nested: analysis.nested.map((ws) => ws.map((w) => w.raw).join(' ')),
    readable: analysis.problem === null,
  };
};

test.each([
  ['git status && npm test', ['git status', 'npm test']],
  ['a || b; c | d |& e & f\ng', ['a', 'b', 'c', 'd', 'e', 'f', 'g']],
  ['echo "a && b" | grep x', ['echo "a && b"', 'grep x']],
  ["echo 'a;b' \\; c", ["echo 'a;b' \\; c"]],
  ['npm   test\t--watch', ['npm test --watch']],
  ['! git diff --quiet', ['git diff --quiet']],
  ['ls # a comment && rm', ['ls']],
  ['git commit -m "fix #1"', ['git commit -m "fix #1"']],
  ['echo $HOME ${USER} "$1"', ['echo $HOME ${USER} "$1"']],
  ['ls &', ['ls']],
  ['ls;', ['ls']],
  ['', []],
])('readable whole: %j', (command, expected) => {
  expect(words(command)).toEqual({ commands: expected, nested: [], readable: true });
});

test.each([
  ['echo $(rm -rf x)', 'a command substitution `$(…)`', ['rm -rf x']],
  ['echo `rm -rf x`', 'a command substitution with backticks', ['rm -rf x']],
  ['diff <(ls a) <(ls b)', 'a process substitution `<(…)`', ['ls a', 'ls b']],
  ['tee >(grep x)', 'a process substitution `>(…)`', ['grep x']],
  ['(cd x && rm -rf y)', 'a subshell `( … )`', ['cd x', 'rm -rf y']],
  ['echo ${x:-$(id)}', 'a parameter expansion `${…}` with an operator', ['x:-$(id)', 'id']],
  ['echo x > f', 'a redirection `> f`', []],
  ['npm test 2>&1 | tail -5', 'a redirection `>&1`', []],
  ['ls >/dev/null', 'a redirection `> /dev/null`', []],
  ['cat <<EOF\nrm -rf x\nEOF', 'a here-document `<<`', []],
  ['cat <<< hi', 'a here-string `<<<`', []],
  ['echo "x', 'an unbalanced quote', []],
  ["echo 'x", 'an unbalanced quote', []],
  ['echo `x', 'a command substitution with backticks', ['x']],
  ['{ rm -rf x; }', 'the shell keyword `{`', []],
  ['for f in *; do rm $f; done', 'the shell keyword `for`', []],
  ['ls &&', 'nothing after `&&`', []],
  ['&& ls', 'empty command before `&&`', []],
  ['case x in a) ls;; esac', 'an unbalanced `)`', []],
  ['ls; !', 'a `!` with no command', []],
  ['f() { ls; }', 'a `(` inside a command', []],
  ['echo \\', 'a backslash at the end', []],
  ['ls )', 'an unbalanced `)`', []],
  ['echo $((1+2))', 'an arithmetic expansion `$((…))`', ['1+2']],
])('not readable whole: %j', (command, problem, nested) => {
  const analysis = splitCommand(command);
  expect(analysis.problem).toBe(problem);
  expect(analysis.nested.map((ws) => ws.map((w) => w.raw).join(' '))).toEqual(nested);
});

test('a heredoc body is not read as commands, and what follows it is', () => {
  expect(words("cat <<'EOF'\nrm -rf /\nEOF\nls").commands).toEqual(['cat', 'ls']);
  expect(words('cat <<-EOF\n\trm -rf /\n\tEOF\nls').commands).toEqual(['cat', 'ls']);
});

test('redirect targets that write a file are reported, /dev/null and fd duplications are not', () => {
  expect(splitCommand('a > out 2>>err &>both 2>&1 >/dev/null < in').writes).toEqual([
    'out',
    'err',
    'both',
  ]);
});

test('operators in quotes or after a backslash are noticed (a preview cannot be trusted with them)', () => {
  expect(splitCommand('echo "a && b"').quotedOperator).toBe(true);
  expect(splitCommand("echo 'a|b'").quotedOperator).toBe(true);
  expect(splitCommand('echo \\;').quotedOperator).toBe(true);
  expect(splitCommand('git commit -m "fix the build"').quotedOperator).toBe(false);
});

// Differential check against mvdan/sh, shfmt's parser (a dev dependency, too slow to decide
// prompts with): whatever this reader calls readable whole, a real Bash parser must read as the
// same plain commands, with the same words and no substitution or file redirection.
const { syntax } = createRequire(import.meta.url)('mvdan-sh');
const parser = syntax.NewParser();
const type = (node: any): string => syntax.NodeType(node);

function referenceCommands(command: string): (string | null)[][] | string {
  let file: any;
  try {
    file = parser.Parse(command, 'x');
  } catch {
    return 'does not parse';
  }
  const commands: (string | null)[][] = [];
  const visit = (stmt: any): string | null => {
    for (const redirect of stmt.Redirs) {
      const target = wordValue(redirect.Word);
      if (target !== undefined) return 'redirects';
    }
    const cmd = stmt.Cmd;
    if (cmd === null) return null;
    if (type(cmd) === 'BinaryCmd') return visit(cmd.X) ?? visit(cmd.Y);
    if (type(cmd) !== 'CallExpr') return type(cmd);
    const assigns = cmd.Assigns.map((a: any) => {
      if (a.Append || a.Index || a.Array || a.Naked) return 'bad';
      const value = a.Value === null ? '' : wordValue(a.Value);
      return value === null ? null : `${a.Name.Value}=${value}`;
    });
    if (assigns.includes('bad')) return 'assignment form';
    commands.push([...assigns, ...cmd.Args.map(wordValue)]);
    return null;
  };
  for (const stmt of file.Stmts) {
    const wrong = visit(stmt);
    if (wrong) return wrong;
  }
  let unsafe: string | null = null;
  syntax.Walk(file, (node: any) => {
    const kind = node === null ? '' : type(node);
    if (['CmdSubst', 'ProcSubst', 'ArithmExp', 'ExtGlob'].includes(kind)) unsafe = kind;
    if (
      kind === 'ParamExp' &&
      (node.Exp || node.Repl || node.Slice || node.Index || node.Excl || node.Length || node.Names)
    )
      unsafe = 'ParamExp with an operator';
    return true;
  });
  return unsafe ?? commands;
}

function bashAccepts(command: string): boolean {
  const run = spawnSync('bash', ['-n'], { input: command, encoding: 'utf8' });
  if (run.error) throw new Error(`this test needs bash on the PATH: ${run.error.message}`);
  return run.status === 0;
}

/** A word's value when it has no expansion, else null (like ShellWord.value). */
function wordValue(word: any): string | null {
  let value = '';
  for (const part of word.Parts) {
    const kind = type(part);
    if (kind === 'Lit') value += part.Value.replace(/\\\n/g, '').replace(/\\([\s\S])/g, '$1');
    else if (kind === 'SglQuoted' && !part.Dollar) value += part.Value;
    else if (kind === 'DblQuoted' && part.Parts.every((p: any) => type(p) === 'Lit'))
      value += part.Parts.map((p: any) => p.Value.replace(/\\([$`"\\\n])/g, '$1')).join('');
    else return null;
  }
  return value;
}

// No `#` and no lone `=`: mvdan-sh 0.10.1 refuses a command named `=` (Bash runs it), and reads a `#` inside a word (`'a'#b`, `$X#b`, `"#"2`) as a comment, where
// Bash does not (`printf '[%s]' 'a'#b` prints [a#b]); comments are in the tables above.
const PIECES = [
  'ls',
  'git',
  'rm',
  '-rf',
  'a',
  'x.txt',
  'FOO=1',
  '"x y"',
  "'a;b'",
  '"$HOME"',
  '$X',
  '${Y}',
  '\\;',
  'a\\ b',
  '&&',
  '||',
  ';',
  '|',
  '|&',
  '&',
  '\n',
  ' ',
  ' ',
  ' ',
  '\t',
  '$(ls)',
  '`id`',
  '<(x)',
  '>',
  '>>',
  '2>&1',
  '>/dev/null',
  '<',
  '(',
  ')',
  '{',
  '}',
  '"',
  "'",
  '\\',
  '<<E',
  '\nE\n',
  '${x:-y}',
  '$((1))',
  'if',
  'then',
  'fi',
  '!',
  '\\\n',
  '"a\\"b"',
  "$'q'",
  '*',
  '~',
  'echo',
  '"a&&b"',
  "'|'",
  '"$(id)"',
  '"`id`"',
  '\\"',
  "\\'",
  '2>',
  'x=(1)',
];

test('what it reads whole, a real Bash parser reads as the same commands (4,000 generated)', () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let readable = 0;
  for (let n = 0; n < 4_000; n++) {
    const length = 1 + Math.floor(random() * 8);
    let command = '';
    for (let i = 0; i < length; i++) {
      const piece = PIECES[Math.floor(random() * PIECES.length)]!;
      // mvdan-sh reads `"a"2>&1` as `"a"` and `2>&1`; Bash reads the word `a2` and `>&1`.
      const glue = random() < 0.4 && !(/^\d/.test(piece) && /["']$/.test(command));
      command += (glue || i === 0 ? '' : ' ') + piece;
    }
    const ours = splitCommand(command);
    if (ours.problem !== null) continue;
    readable++;
    const theirs = referenceCommands(command);
    if (theirs === 'does not parse') {
      // mvdan-sh refuses some commands Bash takes (a command of redirections alone after `|&`):
      // Bash has the last word on the syntax.
      expect({ command, bash: bashAccepts(command) }).toEqual({ command, bash: true });
      continue;
    }
    const mine = ours.commands.map((ws) => ws.map((w) => w.value));
    expect({ command, commands: theirs }).toEqual({ command, commands: mine });
  }
  expect(readable).toBeGreaterThan(400);
});

test('regression: a newline after `&&` ended the list, so `ls &&` and a newline read as whole', () => {
  expect(splitCommand('ls &&\n').problem).toBe('nothing after `&&`');
  expect(splitCommand('ls &&\n\nnpm test')).toMatchObject({ problem: null });
  expect(words('ls |\n  wc -l').commands).toEqual(['ls', 'wc -l']);
});

test('regression: a `!` after a redirection was taken for negation, though Bash runs a command named `!`', () => {
  // Every redirection is a problem, so the `!` after one is never read as negation either.
  expect(splitCommand('>f ! rm -rf x').problem).not.toBeNull();
});
