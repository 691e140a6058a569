import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  BAD_BODIES,
  countRows,
  expectNothingLeaked,
  readBad,
  STRINGS,
  type HostileString,
} from '../support/bad-input.js';
import { connectMcp, initializeRequest, type TestMcpClient } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// The bad-input corpus thrown at the MCP tools on /mcp, through a real MCP client: every bad
// argument is a tool result with `isError: true` whose hint names the argument; nothing is stored
// or leaked; free text is kept byte for byte (titles and bodies neutralised as documented); the
// session keeps answering throughout. Raw bytes that are no JSON-RPC get a 4xx JSON-RPC error.

let server: TestServer;
let bob: string; // a human
let botToken: string; // bob's agent on reviews and ci
let spyToken: string; // carol's agent on secret
let agent: TestMcpClient;
let secretId: number; // a todo on carol's queue, which bot cannot see

beforeAll(async () => {
  server = await startTestServer();
  bob = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
  const carol = (await server.api(server.adminToken, 'POST', '/humans', { name: 'carol' })).body
    .token;
  botToken = (await server.api(bob, 'POST', '/agents', { name: 'bot', queues: ['reviews', 'ci'] }))
    .body.token;
  spyToken = (await server.api(carol, 'POST', '/agents', { name: 'spy', queues: ['secret'] })).body
    .token;
  secretId = (await server.api(carol, 'POST', '/todos', { queue: 'secret', title: 'hidden' })).body
    .todo.id;
  agent = await connectMcp(server.url, botToken);
});
afterAll(async () => {
  expect(agent.errors).toEqual([]);
  await agent.close();
  await server.stop();
});

const stored = () => countRows(server.sql);

type Result = Awaited<ReturnType<TestMcpClient['call']>>;

/** The session still answers a harmless call. */
async function expectAlive(client: TestMcpClient = agent): Promise<void> {
  const listed = await client.call('list_todos', { limit: 1 });
  expect(listed.isError, listed.text).toBeFalsy();
}

/** A refusal: an `isError` result matching `hint`, nothing stored or leaked, the session alive. */
async function expectRefused(
  call: () => Promise<Result>,
  hint: RegExp,
  echoed: string[] = [],
): Promise<string> {
  const before = await stored();
  const text = await expectToolError(call, hint, echoed);
  expect(await stored()).toEqual(before);
  return text;
}

/** An `isError` result matching `hint`, nothing leaked, the session alive (rows: the caller's). */
async function expectToolError(
  call: () => Promise<Result>,
  hint: RegExp,
  echoed: string[] = [],
): Promise<string> {
  const result = await call();
  expect(result.isError, result.text).toBe(true);
  expect(result.text).toMatch(hint);
  expect(result.structuredContent).toBeUndefined();
  expectNothingLeaked(result.text, echoed);
  await expectAlive();
  return result.text;
}

/** An accepted call: its structured content. */
async function accepted(tool: string, args: Record<string, unknown>, client = agent) {
  const result = await client.call(tool, args);
  expect(result.isError, result.text).toBeFalsy();
  return result.data;
}

/** A pending todo on reviews, made through the API (so that only the call under test is MCP's). */
async function newTodo(title = 'a todo'): Promise<number> {
  const { body } = await server.api(bob, 'POST', '/todos', {
    queue: 'reviews',
    title,
    max_attempts: 3,
  });
  return body.todo.id;
}

async function claimed(title?: string): Promise<number> {
  const id = await newTodo(title);
  await accepted('claim_todo', { todo_id: id });
  return id;
}

const ANY_LEASE = '00000000-0000-4000-8000-000000000000';

/** The least each tool needs, all of it valid: one argument at a time is then made wrong. */
const VALID: Record<string, Record<string, unknown>> = {
  list_todos: {},
  get_todo: { todo_id: 1 },
  claim_todo: { todo_id: 1 },
  claim_next: { queue: 'reviews' },
  heartbeat_todo: { todo_id: 1 },
  complete_todo: { todo_id: 1 },
  fail_todo: { todo_id: 1 },
  release_todo: { todo_id: 1 },
  create_todo: { queue: 'reviews', title: 'valid' },
  reply: { todo_id: 1, text: 'valid' },
  request_approval: { question: 'valid?' },
  get_secret: { secret_id: 'abcdefghijkm' },
};
const TOOLS = Object.keys(VALID);

/** One value of each JSON type (an integer and a fraction apart). */
const SAMPLES: Record<string, unknown> = {
  string: '42',
  integer: 42,
  fraction: 1.5,
  boolean: true,
  null: null,
  array: [42],
  object: { value: 42 },
};
/** Which samples a JSON Schema `type` accepts. */
const ACCEPTS: Record<string, string[]> = {
  string: ['string'],
  integer: ['integer'],
  number: ['integer', 'fraction'],
  boolean: ['boolean'],
};

interface PropertySchema {
  type?: string;
}
type Listed = Record<string, { properties: Record<string, PropertySchema>; required: string[] }>;

async function listedTools(client: TestMcpClient = agent): Promise<Listed> {
  const { tools } = await client.client.listTools();
  return Object.fromEntries(
    tools.map((tool) => [
      tool.name,
      {
        properties: tool.inputSchema.properties ?? {},
        required: tool.inputSchema.required ?? [],
      },
    ]),
  );
}

describe('what a principal is offered', () => {
  test('the tools of DESIGN 5.4, each refusing unknown arguments, none deciding an approval', async () => {
    const { tools } = await agent.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
    for (const tool of tools) {
      expect(tool.inputSchema.additionalProperties, tool.name).toBe(false);
      for (const required of tool.inputSchema.required ?? [])
        expect(Object.keys(VALID[tool.name]!), tool.name).toContain(required);
    }
  });

  test('a human is offered the same tools: none records a verdict', async () => {
    const human = await connectMcp(server.url, bob, 'bob');
    try {
      const { tools } = await human.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
    } finally {
      await human.close();
    }
  });
});

describe('wrong types: every argument of every tool, each JSON type it is not', () => {
  test('every argument declares its type, but the free JSON result', async () => {
    const untyped = Object.entries(await listedTools()).flatMap(([tool, { properties }]) =>
      Object.entries(properties)
        .filter(([, schema]) => !schema.type)
        .map(([name]) => `${tool}.${name}`),
    );
    expect(untyped).toEqual(['complete_todo.result']);
  });

  test.each(TOOLS.map((tool) => [tool]))('%s', async (tool) => {
    const { properties } = (await listedTools())[tool]!;
    const before = await stored();
    let tried = 0;
    for (const [name, schema] of Object.entries(properties)) {
      if (!schema.type) continue;
      expect(ACCEPTS[schema.type], `${tool}.${name}: ${schema.type}`).toBeDefined();
      for (const [sample, value] of Object.entries(SAMPLES)) {
        if (ACCEPTS[schema.type]!.includes(sample)) continue;
        tried++;
        const text = await expectToolError(
          () => agent.call(tool, { ...VALID[tool], [name]: value }),
          new RegExp(`\\b${name}\\b`),
        );
        // One argument is wrong, and the hint is about it alone.
        for (const other of Object.keys(properties))
          if (other !== name && !name.includes(other) && !other.includes(name))
            expect(text, `${tool}.${name} = ${JSON.stringify(value)}`).not.toMatch(
              new RegExp(`\\b${other}\\b`),
            );
      }
    }
    expect(tried).toBeGreaterThan(0);
    expect(await stored()).toEqual(before);
  });

  test.each(TOOLS.filter((tool) => Object.keys(VALID[tool]!).length > 0).map((tool) => [tool]))(
    '%s with each required argument missing',
    async (tool) => {
      const { required } = (await listedTools())[tool]!;
      expect(required.length).toBeGreaterThan(0);
      for (const name of required) {
        const args = { ...VALID[tool] };
        delete args[name];
        await expectRefused(() => agent.call(tool, args), new RegExp(`\\b${name}\\b`));
      }
    },
  );

  test.each(TOOLS.map((tool) => [tool]))(
    'regression: %s ignored unknown arguments (a misspelt one was dropped silently)',
    async (tool) => {
      for (const name of ['bogus', 'todoId', 'leaseToken', '__proto__x']) {
        await expectRefused(
          () => agent.call(tool, { ...VALID[tool], [name]: 1 }),
          new RegExp(`Unrecognized key.*${name}`),
        );
      }
    },
  );

  test.each([
    ['todo_id 0', 'get_todo', { todo_id: 0 }, /todo_id must be positive/],
    ['todo_id -1', 'get_todo', { todo_id: -1 }, /todo_id must be positive/],
    ['todo_id 2^53', 'get_todo', { todo_id: 2 ** 53 }, /todo_id/],
    ['todo_id 1e300', 'claim_todo', { todo_id: 1e300 }, /todo_id/],
    ['lease_seconds 0', 'claim_todo', { todo_id: 1, lease_seconds: 0 }, /lease_seconds/],
    ['lease_seconds 86,401', 'claim_next', { queue: 'reviews', lease_seconds: 86_401 }, /86400/],
    ['limit 0', 'list_todos', { limit: 0 }, /limit/],
    ['limit 501', 'list_todos', { limit: 501 }, /limit/],
    ['ttl_seconds 0', 'request_approval', { question: 'q', ttl_seconds: 0 }, /ttl_seconds/],
    [
      'ttl_seconds 604,801',
      'request_approval',
      { question: 'q', ttl_seconds: 604_801 },
      /ttl_seconds/,
    ],
    ['state "sleeping"', 'list_todos', { state: 'sleeping' }, /state must be one of/],
    ['state "OPEN"', 'list_todos', { state: 'OPEN' }, /state must be one of/],
    ['a lease token that is no UUID', 'release_todo', { todo_id: 1, lease_token: 'x' }, /lease/],
  ])('out of range: %s', async (_, tool, args, hint) => {
    await expectRefused(() => agent.call(tool, args), hint);
  });
});

describe('free text: kept byte for byte, titles and bodies neutralised', () => {
  test.each(STRINGS.stored_as_sent.map((s) => [s.name, s]))(
    '%s in every text argument',
    async (_, s) => {
      const created = await accepted('create_todo', {
        queue: 'reviews',
        title: s.text,
        body: s.text,
        key: s.text,
      });
      expect(created.created).toBe(true);
      expect(created.todo).toMatchObject({ title: s.title, body: s.body, idempotency_key: s.text });
      const id = created.todo.id as number;
      expect((await accepted('get_todo', { todo_id: id })).todo).toMatchObject({
        title: s.title,
        body: s.body,
        idempotency_key: s.text,
      });

      const replied = await accepted('reply', { todo_id: id, text: s.text });
      expect(replied.text).toBe(s.text);

      await accepted('claim_todo', { todo_id: id });
      const result = { text: s.text, list: [s.text, { [s.text]: s.text }] };
      await accepted('complete_todo', { todo_id: id, summary: s.text, result });
      const done = await accepted('get_todo', { todo_id: id });
      expect(done.todo.summary).toBe(s.text);
      expect(done.todo.result).toEqual(result);
      const reply = done.history.find((e: { action: string }) => e.action === 'replied');
      expect(reply.data.text).toBe(s.text);

      // A bare string as the result, and a failure's reason.
      const other = await claimed();
      await accepted('complete_todo', { todo_id: other, result: s.text });
      expect((await accepted('get_todo', { todo_id: other })).todo.result).toBe(s.text);
      const failing = await claimed();
      await accepted('fail_todo', { todo_id: failing, reason: s.text });
      expect((await accepted('get_todo', { todo_id: failing })).todo.summary).toBe(s.text);

      const asked = await accepted('request_approval', {
        question: s.text,
        body: s.text,
        todo_id: id,
      });
      expect(asked.todo).toMatchObject({ title: s.title, body: s.body });
    },
  );

  test.each(STRINGS.stored_as_sent.map((s) => [s.name, s]))(
    '%s as a name is refused (regression: list_todos took it as a queue and listed nothing)',
    async (_, s) => {
      await expectNamesRefused(s);
    },
  );

  test.each(STRINGS.not_storable.map((s) => [s.name, s]))(
    'regression: %s was stored altered (or failed inside PostgreSQL) where text is kept as sent',
    async (_, s) => {
      const id = await claimed();
      await expectRefused(
        () => agent.call('complete_todo', { todo_id: id, summary: s.text }),
        /summary/,
      );
      for (const result of [s.text, { text: s.text }, [s.text], { [s.text]: 1 }])
        await expectRefused(() => agent.call('complete_todo', { todo_id: id, result }), /result/);
      await expectRefused(() => agent.call('fail_todo', { todo_id: id, reason: s.text }), /reason/);
      await expectRefused(() => agent.call('reply', { todo_id: id, text: s.text }), /text/);
      await expectRefused(
        () => agent.call('create_todo', { queue: 'reviews', title: 'keyed', key: s.text }),
        /key/,
      );
      await expectRefused(
        () => agent.call('release_todo', { todo_id: id, lease_token: s.text }),
        /lease/,
      );
      // The todo is still held, untouched.
      expect((await accepted('get_todo', { todo_id: id })).todo).toMatchObject({
        state: 'claimed',
        summary: null,
        result: null,
      });
    },
  );

  test('regression: a result with \\u0000 written out as text was refused as a NUL character', async () => {
    const id = await claimed();
    const result = { written: '\\u0000', key: ['\\u0000 and \\\\u0000'] };
    await accepted('complete_todo', { todo_id: id, result, summary: '\\u0000' });
    const done = (await accepted('get_todo', { todo_id: id })).todo;
    expect(done.result).toEqual(result);
    expect(done.summary).toBe('\\u0000');
  });

  test.each(STRINGS.not_storable.map((s) => [s.name, s]))(
    '%s in titles and bodies is neutralised',
    async (_, s) => {
      const created = await accepted('create_todo', {
        queue: 'reviews',
        title: s.text,
        body: s.text,
      });
      expect(created.todo).toMatchObject({ title: s.title, body: s.body });
      const asked = await accepted('request_approval', { question: s.text, body: s.text });
      expect(asked.todo).toMatchObject({ title: s.title, body: s.body });
    },
  );

  test.each(STRINGS.not_storable.map((s) => [s.name, s]))(
    'regression: %s as a name failed inside PostgreSQL',
    async (_, s) => {
      await expectNamesRefused(s);
    },
  );

  async function expectNamesRefused(s: HostileString) {
    const echoed = [s.text];
    await expectRefused(
      () => agent.call('create_todo', { queue: s.text, title: 't' }),
      /queue/,
      echoed,
    );
    await expectRefused(
      () => agent.call('create_todo', { queue: 'reviews', title: 't', kind: s.text }),
      /kind/,
      echoed,
    );
    await expectRefused(
      () => agent.call('create_todo', { queue: 'reviews', title: 't', assignee: s.text }),
      /assignee|principal/,
      echoed,
    );
    await expectRefused(() => agent.call('claim_next', { queue: s.text }), /queue/, echoed);
    await expectRefused(() => agent.call('list_todos', { queue: s.text }), /queue/, echoed);
  }
});

describe('too much: one over every documented maximum', () => {
  const over = (n: number) => 'x'.repeat(n + 1);
  test.each([
    ['create_todo', { queue: 'reviews', title: over(10_000) }, /title is too long/],
    ['create_todo', { queue: 'reviews', title: 't', body: over(65_536) }, /body is too long/],
    ['create_todo', { queue: 'reviews', title: 't', key: over(200) }, /key is too long/],
    ['create_todo', { queue: 'a'.repeat(65), title: 't' }, /queue/],
    ['create_todo', { queue: 'reviews', title: 't', kind: `a.${'b'.repeat(99)}` }, /kind/],
    ['create_todo', { queue: 'reviews', title: 't', assignee: over(64) }, /assignee|principal/],
    ['claim_next', { queue: 'a'.repeat(65) }, /queue/],
    ['list_todos', { queue: 'a'.repeat(65) }, /queue/],
    ['complete_todo', { todo_id: 1, lease_token: ANY_LEASE, summary: over(65_536) }, /summary/],
    ['fail_todo', { todo_id: 1, lease_token: ANY_LEASE, reason: over(65_536) }, /reason/],
    ['reply', { todo_id: 1, text: over(16_384) }, /text is too long/],
    ['request_approval', { question: over(10_000) }, /question is too long/],
    ['request_approval', { question: 'q', body: over(65_536) }, /body is too long/],
    ['heartbeat_todo', { todo_id: 1, lease_token: over(100) }, /lease/],
  ])('%s %#', async (tool, args, hint) => {
    await expectRefused(() => agent.call(tool, args), hint);
  });

  test('a result over 1 MB', async () => {
    const id = await claimed();
    await expectRefused(
      () => agent.call('complete_todo', { todo_id: id, result: over(1_048_576) }),
      /result is too long/,
    );
  });

  test('regression: a request over the 2 MB body cap got {error, code}, no JSON-RPC error', async () => {
    const before = await stored();
    const answer = await postRaw(
      JSON.stringify(
        callMessage('create_todo', { queue: 'reviews', title: 't', body: over(3_000_000) }),
      ),
    );
    expect(answer.status).toBe(413);
    expectJsonRpcError(answer.text);
    expect(await stored()).toEqual(before);
    await expectAlive();
  });
});

describe('deep nesting in a result: at most 64 levels', () => {
  const nested = (depth: number): unknown => {
    let value: unknown = 'core';
    for (let i = 0; i < depth; i++) value = i % 2 ? { in: value } : [value];
    return value;
  };

  test('64 levels are kept', async () => {
    const id = await claimed();
    await accepted('complete_todo', { todo_id: id, result: nested(64) });
    expect((await accepted('get_todo', { todo_id: id })).todo.result).toEqual(nested(64));
  });

  test('regression: 65 levels were stored (no depth limit)', async () => {
    const id = await claimed();
    await expectRefused(
      () => agent.call('complete_todo', { todo_id: id, result: nested(65) }),
      /result is nested too deeply \(at most 64 levels\)/,
    );
  });

  // Sent raw: the client itself cannot serialise values this deep.
  test.each([5_000, 500_000])(
    'regression: %i levels overflowed the stack (or were stored), sent raw',
    async (depth) => {
      const id = await claimed();
      const before = await stored();
      const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
      const message = JSON.stringify(callMessage('complete_todo', { todo_id: id, result: 0 }));
      const answer = await postRaw(message.replace('"result":0', `"result":${deep}`));
      expect(answer.status).toBe(200);
      const reply = messageOf(answer.text);
      expect(reply.result.isError).toBe(true);
      expect(reply.result.content[0].text).toMatch(
        /^result is nested too deeply \(at most 64 levels\)\. Fix the arguments/,
      );
      expectNothingLeaked(answer.text);
      expect(await stored()).toEqual(before);
      expect((await accepted('get_todo', { todo_id: id })).todo.state).toBe('claimed');
      await expectAlive();
    },
  );
});

describe('other principals', () => {
  /** A refusal's text with todo numbers taken out, to compare two refusals. */
  const shape = (text: string) => text.replace(/#\d+/g, '#N');

  test("another queue's todo answers exactly like a missing one, whatever the tool", async () => {
    const missing = 2_000_000_000;
    const calls: [string, Record<string, unknown>][] = [
      ['get_todo', {}],
      ['claim_todo', {}],
      ['heartbeat_todo', { lease_token: ANY_LEASE }],
      ['complete_todo', { lease_token: ANY_LEASE, summary: 'mine now' }],
      ['fail_todo', { lease_token: ANY_LEASE }],
      ['release_todo', { lease_token: ANY_LEASE }],
      ['reply', { text: 'hello' }],
    ];
    for (const [tool, args] of calls) {
      const hidden = await expectRefused(
        () => agent.call(tool, { ...args, todo_id: secretId }),
        /not found/,
      );
      const absent = await expectRefused(
        () => agent.call(tool, { ...args, todo_id: missing }),
        /not found/,
      );
      expect(shape(hidden), tool).toBe(shape(absent));
    }
    const asked = await expectRefused(
      () => agent.call('request_approval', { question: 'q', todo_id: secretId }),
      /not found/,
    );
    expect(shape(asked)).toBe(
      shape((await agent.call('request_approval', { question: 'q', todo_id: missing })).text),
    );
    const listed = await accepted('list_todos', { queue: 'secret', state: 'all' });
    expect(listed.todos).toEqual([]);
    const [row] = await server.sql`select state, summary from todos where id = ${secretId}`;
    expect(row).toEqual({ state: 'pending', summary: null });
  });

  test("another principal's queue: refused with a next step", async () => {
    await expectRefused(
      () => agent.call('claim_next', { queue: 'secret' }),
      /may not use queue secret/,
    );
    await expectRefused(
      () => agent.call('create_todo', { queue: 'secret', title: 'planted' }),
      /may not use queue secret/,
    );
    await expectRefused(
      () => agent.call('create_todo', { queue: 'reviews', title: 't', assignee: 'spy' }),
      /spy does not work queue reviews/,
    );
  });

  test('an agent cannot decide the approval it asked for', async () => {
    const asked = (await accepted('request_approval', { question: 'May I deploy?' })).todo;
    for (const tool of ['decide_approval', 'approve', 'deny'])
      await expectRefused(
        () => agent.call(tool, { todo_id: asked.id, verdict: 'approved' }),
        new RegExp(`Tool ${tool} not found`),
      );
    await expectRefused(() => agent.call('claim_todo', { todo_id: asked.id }), /an approval/);
    await expectRefused(
      () => agent.call('complete_todo', { todo_id: asked.id, lease_token: ANY_LEASE }),
      /lease on todo .* is lost/,
    );
    const [row] = await server.sql`select state, verdict from todos where id = ${asked.id}`;
    expect(row).toEqual({ state: 'pending', verdict: null });
  });

  describe("a session id of another principal's session: refused, not taken over", () => {
    test.each([
      ['POST', 'another agent'],
      ['GET', 'another agent'],
      ['DELETE', 'another agent'],
      ['POST', 'the human who owns the agent'],
      ['DELETE', 'the human who owns the agent'],
    ])('%s by %s: 404', async (method, who) => {
      const token = who === 'another agent' ? spyToken : bob;
      const before = await stored();
      const answer = await postRaw(
        method === 'POST'
          ? JSON.stringify(callMessage('create_todo', { queue: 'reviews', title: 'hijacked' }))
          : undefined,
        { token, method },
      );
      expect(answer.status).toBe(404);
      expectJsonRpcError(answer.text);
      expect(await stored()).toEqual(before);
      await expectAlive();
    });

    test.each([
      ['no token', null],
      ['a malformed token', 'Bearer not a token'],
      ['an unknown token', `Bearer sbk_${'x'.repeat(43)}`],
    ])('with %s: 401', async (_, authorization) => {
      const before = await stored();
      const answer = await postRaw(JSON.stringify(callMessage('list_todos', {})), {
        authorization,
      });
      expect(answer.status).toBe(401);
      expectNothingLeaked(answer.text);
      expect(await stored()).toEqual(before);
      await expectAlive();
    });
  });

  test('a revoked token loses its session at the next call', async () => {
    const { body } = await server.api(bob, 'POST', '/agents', { name: 'temp', queues: ['ci'] });
    const temp = await connectMcp(server.url, body.token, 'temp');
    try {
      await expectAlive(temp);
      expect((await server.api(bob, 'POST', '/agents/temp/revoke')).status).toBe(200);
      const before = await stored();
      await expect(
        temp.call('create_todo', { queue: 'ci', title: 'after revoke' }),
      ).rejects.toThrow(/token is invalid or revoked/);
      expect(await stored()).toEqual(before);
    } finally {
      await temp.close();
    }
  });
});

describe('a failure inside switchboard', () => {
  test("regression: an internal error's message (from PostgreSQL) reached the model", async () => {
    // A real failure in the real database: a trigger refuses one reply's event.
    await server.sql.unsafe(`
      create function refuse_tripped_reply() returns trigger language plpgsql as $$
      begin raise exception 'tripped in refuse_tripped_reply: select secret from tokens'; end $$;
      create trigger refuse_tripped_reply before insert on todo_events for each row
        when (new.data->>'text' = 'trip the trigger') execute function refuse_tripped_reply();`);
    try {
      const id = await newTodo();
      const text = await expectRefused(
        () => agent.call('reply', { todo_id: id, text: 'trip the trigger' }),
        /^reply failed inside switchboard/,
      );
      expect(text).not.toMatch(/tripped|refuse_tripped_reply|tokens/);
    } finally {
      await server.sql.unsafe(`drop trigger refuse_tripped_reply on todo_events;
        drop function refuse_tripped_reply();`);
    }
  });
});

describe('raw bytes on /mcp: a 4xx JSON-RPC error, no stack, the session goes on', () => {
  test.each(BAD_BODIES.map((name) => [name]))(
    'the corpus body %s (regression: unparsable ones got {error, code}, no JSON-RPC)',
    async (name) => {
      for (const session of [true, false]) {
        const before = await stored();
        const answer = await postRaw(readBad(`bodies/${name}`), { session });
        expect(answer.status, `${session}: ${answer.text}`).toBeGreaterThanOrEqual(400);
        expect(answer.status).toBeLessThan(500);
        expectJsonRpcError(answer.text);
        expect(await stored()).toEqual(before);
      }
      await expectAlive();
    },
  );

  test.each([
    ['an object that is no JSON-RPC', { queue: 'reviews', title: 'x' }],
    ['a method that is a number', { jsonrpc: '2.0', id: 1, method: 42 }],
    ['the wrong JSON-RPC version', { jsonrpc: '1.0', id: 1, method: 'tools/list' }],
  ])('%s', async (_, message) => {
    const before = await stored();
    const answer = await postRaw(JSON.stringify(message));
    expect(answer.status, answer.text).toBe(400);
    expectJsonRpcError(answer.text);
    expect(await stored()).toEqual(before);
    await expectAlive();
  });

  test('an empty batch: nothing to answer (202, as the SDK does)', async () => {
    const before = await stored();
    const answer = await postRaw('[]');
    expect(answer.status).toBe(202);
    expect(await stored()).toEqual(before);
    await expectAlive();
  });

  test('regression: bytes that are not UTF-8 inside a tool call were stored as U+FFFD', async () => {
    const before = await stored();
    const message = JSON.stringify(callMessage('reply', { todo_id: 1, text: 'PLACEHOLDER' }));
    const [head, tail] = message.split('PLACEHOLDER') as [string, string];
    const body = Buffer.concat([
      Buffer.from(head),
      Buffer.from([0x61, 0xc3, 0x28, 0xff]),
      Buffer.from(tail),
    ]);
    const answer = await postRaw(body);
    expect(answer.status).toBe(400);
    expect(messageOf(answer.text)).toMatchObject({ error: { code: -32700, message: /UTF-8/ } });
    expectJsonRpcError(answer.text);
    expect(await stored()).toEqual(before);
    await expectAlive();
  });

  // What the SDK answers for a request whose params fail its own schema: an error for the
  // request's id (-32603) or, when the message itself is no valid request, a parse error (-32700).
  test.each([
    ['an unknown method', { jsonrpc: '2.0', id: 7, method: 'todos/approve', params: {} }, -32601],
    [
      'arguments that are a string',
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_todo', arguments: 'x' } },
      -32603,
    ],
    ['params that are null', { jsonrpc: '2.0', id: 7, method: 'tools/call', params: null }, -32700],
    [
      'no tool name',
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { arguments: {} } },
      -32603,
    ],
  ])('%s: a JSON-RPC error', async (_, message, code) => {
    const before = await stored();
    const answer = await postRaw(JSON.stringify(message));
    expect(answer.status, answer.text).toBeLessThan(500);
    const reply = messageOf(answer.text);
    expect(reply).toMatchObject({
      jsonrpc: '2.0',
      id: code === -32700 ? null : 7,
      error: { code },
    });
    expectNothingLeaked(answer.text);
    expect(await stored()).toEqual(before);
    await expectAlive();
  });

  test('a body that is not declared JSON: 415', async () => {
    const answer = await postRaw(JSON.stringify(callMessage('list_todos', {})), {
      contentType: 'text/plain',
    });
    expect(answer.status).toBe(415);
    expectJsonRpcError(answer.text);
    await expectAlive();
  });

  // The Streamable HTTP rules for a POST, as the SDK's transport answers them
  // (src/surfaces/mcp/json-response-transport.ts keeps them refusal for refusal).
  test.each([
    ['no Accept', undefined],
    ['an Accept of JSON alone', 'application/json'],
    ['an Accept of event streams alone', 'text/event-stream'],
  ])('%s: 406, as the SDK answers', async (_, accept) => {
    const before = await stored();
    const answer = await postRaw(JSON.stringify(callMessage('list_todos', {})), { accept });
    expect(answer.status, answer.text).toBe(406);
    expect(messageOf(answer.text).error.message).toMatch(/^Not Acceptable/);
    expect(await stored()).toEqual(before);
    await expectAlive();
  });

  test('a protocol version the SDK does not speak: 400, naming the ones it does', async () => {
    const answer = await postRaw(JSON.stringify(callMessage('list_todos', {})), {
      protocolVersion: '1999-01-01',
    });
    expect(answer.status).toBe(400);
    expect(messageOf(answer.text).error.message).toMatch(
      /Unsupported protocol version: 1999-01-01 \(supported versions: .*2025-06-18/,
    );
  });

  test('a batch over 100 messages: 400, nothing done', async () => {
    const before = await stored();
    const batch = Array.from({ length: 101 }, () =>
      callMessage('create_todo', { queue: 'ci', title: 'batched' }),
    );
    const answer = await postRaw(JSON.stringify(batch));
    expect(answer.status).toBe(400);
    expect(messageOf(answer.text).error).toMatchObject({ code: -32600 });
    expect(await stored()).toEqual(before);
  });

  test('two initializations in one batch: 400', async () => {
    // In a session: without one, /mcp refuses anything but a single initialize before the SDK.
    const batch = [initializeRequest('x', 1), initializeRequest('x', 2)];
    const answer = await postRaw(JSON.stringify(batch));
    expect(answer.status).toBe(400);
    expect(messageOf(answer.text).error.message).toMatch(/Only one initialization request/);
  });

  test('a batch of requests is answered by one array, each by its id', async () => {
    const first = callMessage('list_todos', { limit: 1 });
    const second = { jsonrpc: '2.0', id: nextId++, method: 'tools/list' };
    const notification = { jsonrpc: '2.0', method: 'notifications/progress', params: {} };
    const answer = await postRaw(JSON.stringify([first, notification, second]));
    expect(answer.status).toBe(200);
    const answers = JSON.parse(answer.text) as { id: number; result?: unknown }[];
    expect(answers.map((a) => a.id).sort()).toEqual([first.id, second.id].sort());
    expect(answers.every((a) => a.result !== undefined)).toBe(true);
  });

  test('notifications alone: 202 and no body', async () => {
    const answer = await postRaw(
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    );
    expect(answer).toEqual({ status: 202, text: '' });
  });
});

// Raw JSON-RPC on /mcp, for what a real client would never send.

let nextId = 1000;
function callMessage(name: string, args: Record<string, unknown>) {
  return {
    jsonrpc: '2.0',
    id: nextId++,
    method: 'tools/call',
    params: { name, arguments: args },
  };
}

/** POSTs (or GETs, DELETEs) bytes to /mcp, in the agent's session unless told otherwise. */
async function postRaw(
  body: string | Buffer | undefined,
  options: {
    token?: string;
    method?: string;
    session?: boolean;
    authorization?: string | null;
    contentType?: string;
    /** The Accept header: undefined sends none. */
    accept?: string | undefined;
    protocolVersion?: string;
  } = {},
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = {
    'content-type': options.contentType ?? 'application/json',
  };
  const accept = 'accept' in options ? options.accept : 'application/json, text/event-stream';
  if (accept !== undefined) headers.accept = accept;
  const authorization =
    options.authorization === undefined
      ? `Bearer ${options.token ?? botToken}`
      : options.authorization;
  if (authorization !== null) headers.authorization = authorization;
  if (options.session !== false) {
    headers['mcp-session-id'] = agent.transport.sessionId!;
    const version = options.protocolVersion ?? agent.transport.protocolVersion;
    if (version) headers['mcp-protocol-version'] = version;
  }
  const controller = new AbortController();
  const response = await fetch(`${server.url}/mcp`, {
    method: options.method ?? 'POST',
    headers,
    body,
    signal: controller.signal,
  });
  // A GET that were let in would be an endless event stream: its head is the answer.
  const text = response.status === 200 && options.method === 'GET' ? '' : await response.text();
  controller.abort();
  return { status: response.status, text };
}

/** The one JSON-RPC message of an answer, sent as JSON or as one server-sent event. */
function messageOf(text: string): any {
  const data = text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5))
    .join('\n');
  return JSON.parse(data || text);
}

function expectJsonRpcError(text: string): void {
  const message = messageOf(text);
  expect(message).toMatchObject({
    jsonrpc: '2.0',
    error: { code: expect.any(Number), message: expect.any(String) },
  });
  expectNothingLeaked(text);
}
