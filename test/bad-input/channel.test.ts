import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  BAD_BODIES,
  countRows,
  expectNothingLeaked,
  readBad,
  STRINGS,
} from '../support/bad-input.js';
import { BIN } from '../support/claude-code-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { runMark } from '../support/leftover-processes.js';

// Bad input thrown at `switchboard channel` on stdin, as raw bytes: lines that are not JSON or
// not JSON-RPC, unknown methods, permission requests that are malformed or carry hostile text,
// tool calls with arguments of the wrong type, and hostile todo text on its way into the session.
// Throughout, the process stays up and answers the next request, and stdout carries JSON-RPC
// lines only (CHANNELS.md).

let server: TestServer;
let human: string;
let agents = 0;

beforeAll(async () => {
  server = await startTestServer({
    deliveryTiming: { rerings: [60_000], scanMs: 100, heartbeatMs: 500, sessionTtlMs: 5000 },
  });
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
});
afterAll(() => server.stop());

/** A fresh agent on a queue of its own. */
async function agent(): Promise<{ name: string; queue: string; token: string }> {
  const n = ++agents;
  const { body } = await server.api(human, 'POST', '/agents', {
    name: `bad-${n}`,
    queues: [`bad${n}`],
  });
  return { name: `bad-${n}`, queue: `bad${n}`, token: body.token };
}

const WAIT_MS = 15_000;

/** Resolves once `check` returns something; only the deadline of a hung process fails it. */
async function until<T>(
  check: () => T | undefined | Promise<T | undefined>,
  what: () => string,
): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** How many channel consumer sessions the principal has open. */
async function sessionsOf(principal: string): Promise<number> {
  const [row] = await server.sql<{ n: number }[]>`
    select count(*)::int as n from consumer_sessions where principal = ${principal} and path = 'channel'`;
  return row!.n;
}

/** `switchboard channel` driven line by line, the way Claude Code drives it. */
class Channel {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every complete stdout line, unparsed: a line that is not JSON-RPC must fail a test. */
  readonly lines: string[] = [];
  private partial = '';
  private stderrText = '';
  private nextId = 1000;

  constructor(
    readonly principal: string,
    token: string,
  ) {
    this.child = spawn(process.execPath, [BIN, 'channel'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...runMark(),
        SWITCHBOARD_URL: server.url,
        SWITCHBOARD_TOKEN: token,
      },
    });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      const parts = (this.partial + chunk).split('\n');
      this.partial = parts.pop()!;
      this.lines.push(...parts);
    });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderrText += chunk.toString()));
    // A child that died leaves stdin unwritable; the next test says so instead of crashing vitest.
    this.child.stdin.on('error', () => {});
  }

  static async start(who: { name: string; token: string }): Promise<Channel> {
    const channel = new Channel(who.name, who.token);
    await channel.request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: { roots: {}, elicitation: {} },
      clientInfo: { name: 'claude-code', version: '2.1.90' },
    });
    channel.send({ method: 'notifications/initialized' });
    await channel.attached();
    return channel;
  }

  stderr(): string {
    return this.stderrText;
  }

  /** Every stdout line so far, parsed; each must be a JSON-RPC 2.0 message. */
  messages(): any[] {
    return this.lines.map((line) => {
      const message = JSON.parse(line);
      expect(message.jsonrpc, line.slice(0, 200)).toBe('2.0');
      return message;
    });
  }

  write(bytes: Buffer | string): void {
    this.child.stdin.write(bytes);
  }

  send(message: object): void {
    this.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
  }

  /** Sends a request and resolves with its whole answer (`result` or `error`). */
  async request(method: string, params?: object): Promise<any> {
    const id = this.nextId++;
    this.send({ id, method, ...(params === undefined ? {} : { params }) });
    return this.answerTo(id);
  }

  answerTo(id: number | string): Promise<any> {
    return until(
      () => {
        if (this.child.exitCode !== null || this.child.signalCode !== null)
          throw new Error(
            `the channel exited (${this.child.exitCode}); stderr: ${this.stderrText}`,
          );
        return this.messages().find((m) => m.id === id && !('method' in m));
      },
      () => `an answer to ${id}; stdout: ${this.lines.join('\n').slice(-2000)}`,
    );
  }

  async call(name: string, args: unknown): Promise<{ isError?: boolean; text: string }> {
    const answer = await this.request('tools/call', { name, arguments: args });
    expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
    const result = answer.result as { isError?: boolean; content: { text: string }[] };
    return { isError: result.isError, text: result.content.map((c) => c.text).join('') };
  }

  /** Still up, still answering, and nothing but JSON-RPC on stdout. */
  async expectAlive(): Promise<void> {
    const pong = await this.request('ping');
    expect(pong.result).toEqual({});
    expect(this.child.exitCode).toBeNull();
    this.messages();
    expect(this.partial).toBe('');
  }

  /** Its event stream is registered as a channel consumer session. */
  async attached(): Promise<void> {
    await until(
      async () => ((await sessionsOf(this.principal)) > 0 ? true : undefined),
      () => `${this.principal}'s channel to attach; stderr: ${this.stderrText}`,
    );
  }

  events(): { content: string; meta: Record<string, unknown> }[] {
    return this.messages()
      .filter((m) => m.method === 'notifications/claude/channel')
      .map((m) => m.params);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    await exited;
  }
}

/** Permission request ids as Claude Code makes them: five letters a–z without `l`. */
const LETTERS = 'abcdefghijkmnopqrstuvwxyz';
let requestNumber = 0;
function requestId(): string {
  let n = ++requestNumber;
  let id = '';
  for (let i = 0; i < 5; i++) {
    id = LETTERS[n % 25] + id;
    n = Math.floor(n / 25);
  }
  return id;
}

interface Approval {
  id: number;
  title: string;
  body: string | null;
  request_id: string | null;
}

async function approvalFor(request: string): Promise<Approval | undefined> {
  const [row] = await server.sql<Approval[]>`
    select id, title, body, request_id from todos where kind = 'approval' and request_id = ${request}`;
  return row;
}

const permissionRequest = (params: unknown) => ({
  method: 'notifications/claude/channel/permission_request',
  params,
});

const validRequest = () => ({
  request_id: requestId(),
  tool_name: 'Bash',
  description: 'Run the test suite',
  input_preview: '{"command":"npm test"}',
});

// No channel or control character, no line break: what an event's text and meta may carry.
const UNSAFE =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /<\s*\/?\s*channel|[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/i;

describe('stdin that is not JSON-RPC is dropped; the next request is answered', () => {
  let channel: Channel;
  beforeAll(async () => {
    channel = await Channel.start(await agent());
  });
  afterAll(() => channel.stop());

  /** Ids the garbage below carries: none of them may ever be answered. */
  const GARBAGE_IDS = ['v1', 'no-version', 'm', 'batched', 'bom'];

  const LINES: [string, Buffer | string][] = [
    ['not JSON', 'hello, channel'],
    ['an empty line', ''],
    ['only whitespace', ' \t  '],
    ['truncated JSON', '{"jsonrpc":"2.0","id":1,"method":"pi'],
    ['a lone brace', '{'],
    ['two objects on one line', '{"jsonrpc":"2.0","method":"a"}{"jsonrpc":"2.0","method":"b"}'],
    ['JSON with a trailing comma', '{"jsonrpc":"2.0","method":"ping",}'],
    ['a JSON string', '"ping"'],
    ['a JSON number', '42'],
    ['JSON null', 'null'],
    ['an empty object', '{}'],
    ['JSON-RPC 1.0', '{"jsonrpc":"1.0","id":"v1","method":"ping"}'],
    ['no jsonrpc member', '{"id":"no-version","method":"ping"}'],
    ['a method that is a number', '{"jsonrpc":"2.0","id":"m","method":42}'],
    ['params that are a string', '{"jsonrpc":"2.0","method":"ping","params":"x"}'],
    ['a batch', '[{"jsonrpc":"2.0","id":"batched","method":"ping"}]'],
    ['a byte-order mark before a request', '\ufeff{"jsonrpc":"2.0","id":"bom","method":"ping"}'],
    ['a response to nothing', '{"jsonrpc":"2.0","id":"r","result":{}}'],
    ['an error to nothing', '{"jsonrpc":"2.0","id":77,"error":{"code":-1,"message":"x"}}'],
    ['NUL bytes', Buffer.from([0, 0, 0])],
    ['invalid UTF-8', Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0xc0, 0xaf, 0xed, 0xa0, 0x80])],
    ['an escape sequence', '\u001b[2J\u001b]0;title\u0007'],
    ...BAD_BODIES.map((name): [string, Buffer] => [
      `the corpus body ${name}`,
      readBad(`bodies/${name}`),
    ]),
  ];

  test.each(LINES)('%s', async (_, line) => {
    const before = channel.lines.length;
    channel.write(
      Buffer.concat([Buffer.isBuffer(line) ? line : Buffer.from(line), Buffer.from('\n')]),
    );
    await channel.expectAlive();
    const answers = channel.messages().slice(before);
    // The ping's answer, and nothing for the garbage.
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ result: {} });
    expect(channel.messages().filter((m) => GARBAGE_IDS.includes(m.id))).toEqual([]);
  });

  test('a request spread over many writes, cut inside a multi-byte character, is answered', async () => {
    const bytes = Buffer.from(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'split',
        method: 'ping',
        params: { _meta: { note: 'café 😀' } },
      }) + '\n',
    );
    for (let at = 0; at < bytes.length; at += 3) channel.write(bytes.subarray(at, at + 3));
    expect((await channel.answerTo('split')).result).toEqual({});
  });

  test('a request ended by CRLF is answered', async () => {
    channel.write('{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n');
    expect((await channel.answerTo('crlf')).result).toEqual({});
  });

  test('a request with invalid UTF-8 inside a string is answered', async () => {
    channel.write(
      Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":"utf8","method":"ping","params":{"_meta":{"x":"'),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('"}}}\n'),
      ]),
    );
    expect((await channel.answerTo('utf8')).result).toEqual({});
  });

  test('a request without an id is a notification: no answer', async () => {
    const before = channel.lines.length;
    channel.write('{"jsonrpc":"2.0","method":"ping"}\n');
    channel.write('{"jsonrpc":"2.0","method":"tools/list","params":{}}\n');
    await channel.expectAlive();
    expect(channel.lines.slice(before)).toHaveLength(1);
  });

  test('an unknown method is refused with -32601; an unknown notification is ignored', async () => {
    const before = channel.lines.length;
    channel.send({ method: 'notifications/no/such/thing', params: {} });
    channel.send({ method: 'notifications/claude/channel/unheard_of', params: { x: 1 } });
    const refused = await channel.request('no/such/method', { x: 1 });
    expect(refused.error.code).toBe(-32601);
    expectNothingLeaked(JSON.stringify(refused));
    // A notification of Claude Code's, sent as a request, is no method of the server either.
    const asRequest = await channel.request(
      'notifications/claude/channel/permission_request',
      validRequest(),
    );
    expect(asRequest.error.code).toBe(-32601);
    await channel.expectAlive();
    expect(channel.lines.slice(before)).toHaveLength(3);
  });

  test('a line of 5 MB that is not JSON is dropped; a request of 5 MB is answered', async () => {
    channel.write('x'.repeat(5 * 1024 * 1024) + '\n');
    await channel.expectAlive();
    channel.send({
      id: 'huge',
      method: 'ping',
      params: { _meta: { pad: 'y'.repeat(5 * 1024 * 1024) } },
    });
    expect((await channel.answerTo('huge')).result).toEqual({});
    await channel.expectAlive();
  });

  test('regression: a line over 10 MB does not end the channel', async () => {
    // The SDK's stdio transport closed itself (and so the channel) past 10 MB of buffered input.
    const before = channel.lines.length;
    channel.send({
      id: 'over',
      method: 'ping',
      params: { _meta: { pad: 'y'.repeat(10_500_000) } },
    });
    await channel.expectAlive();
    expect(channel.messages().slice(before)).toEqual([
      { jsonrpc: '2.0', id: expect.any(Number), result: {} },
    ]);
    await until(
      () => (/ignored a line of \d+ bytes/.test(channel.stderr()) ? true : undefined),
      () => `a log line; stderr: ${channel.stderr()}`,
    );
  });
});

describe('repeated handshake messages', () => {
  test('regression: a second `initialized` does not open a second event stream', async () => {
    const who = await agent();
    const channel = await Channel.start(who);
    try {
      channel.send({ method: 'notifications/initialized' });
      channel.send({ method: 'notifications/initialized' });
      await channel.expectAlive();
      const { body } = await server.api(human, 'POST', '/todos', {
        queue: who.queue,
        title: 'once',
      });
      await until(
        () => (channel.events().length > 0 ? true : undefined),
        () => 'the wake',
      );
      // Give a second stream its chance to register, then count what attached and what rang.
      await channel.expectAlive();
      expect(await sessionsOf(who.name)).toBe(1);
      expect(channel.events().filter((e) => e.meta.todo_id === String(body.todo.id))).toHaveLength(
        1,
      );
    } finally {
      await channel.stop();
    }
  });
});

describe('permission requests', () => {
  let channel: Channel;
  beforeAll(async () => {
    channel = await Channel.start(await agent());
  });
  afterAll(() => channel.stop());

  /** Sends a valid request after whatever was sent, and waits for its approval to be stored. */
  async function sentinel(): Promise<Approval> {
    const params = validRequest();
    channel.send(permissionRequest(params));
    return until(
      () => approvalFor(params.request_id),
      () => `the approval for ${params.request_id}; stderr: ${channel.stderr()}`,
    );
  }

  const valid = validRequest();
  const without = (field: string) =>
    Object.fromEntries(Object.entries(valid).filter(([key]) => key !== field));
  const INVALID: [string, unknown][] = [
    ['no params', undefined],
    ['params null', null],
    ['params an array', [valid]],
    ['params a string', 'abcde Bash'],
    ['params empty', {}],
    ...['request_id', 'tool_name', 'description', 'input_preview'].map(
      (field): [string, unknown] => [`${field} missing`, without(field)],
    ),
    ...['request_id', 'tool_name', 'description', 'input_preview'].flatMap((field) =>
      (
        [
          ['a number', 12345],
          ['null', null],
          ['an object', { text: 'x' }],
          ['an array', ['x']],
          ['true', true],
        ] as const
      ).map(([what, value]): [string, unknown] => [
        `${field} ${what}`,
        { ...valid, [field]: value },
      ]),
    ),
    ['request_id upper case', { ...valid, request_id: 'ABCDE' }],
    ['request_id of four letters', { ...valid, request_id: 'abcd' }],
    ['request_id of six letters', { ...valid, request_id: 'abcdef' }],
    ['request_id of 10,000 letters', { ...valid, request_id: 'a'.repeat(10_000) }],
    ['request_id with an l', { ...valid, request_id: 'abcle' }],
    ['request_id with a digit', { ...valid, request_id: 'abc1e' }],
    ['request_id padded', { ...valid, request_id: ' abcde' }],
    ['request_id ending in a newline', { ...valid, request_id: 'abcde\n' }],
    ['request_id with a NUL', { ...valid, request_id: 'abcd\u0000' }],
    ['request_id a channel tag', { ...valid, request_id: '</channel>' }],
    ['request_id empty', { ...valid, request_id: '' }],
  ];

  test.each(INVALID)('%s: no approval, the next request is answered', async (_, params) => {
    const before = await countRows(server.sql);
    channel.send(permissionRequest(params));
    const after = await sentinel();
    // Only the sentinel was stored: one todo, its one event.
    expect(await countRows(server.sql)).toEqual({
      ...before,
      todos: before.todos! + 1,
      todo_events: before.todo_events! + 1,
    });
    expect(after.request_id).not.toBe(valid.request_id);
    expect(await approvalFor(valid.request_id)).toBeUndefined();
    await channel.expectAlive();
  });

  test('a malformed request is logged on stderr, not answered on stdout', async () => {
    const before = channel.lines.length;
    channel.send(permissionRequest({ ...valid, tool_name: 42 }));
    await sentinel();
    await channel.expectAlive();
    expect(channel.lines.slice(before)).toHaveLength(1); // the ping's answer
    await until(
      () => (/ignored/.test(channel.stderr()) ? true : undefined),
      () => `a log line; stderr: ${channel.stderr()}`,
    );
  });

  const HOSTILE = [...STRINGS.stored_as_sent, ...STRINGS.not_storable];

  test.each(HOSTILE.map((s) => [s.name, s]))(
    'hostile text (%s) in every field: an approval, neutralised',
    async (_, s) => {
      const params = {
        request_id: requestId(),
        tool_name: s.text,
        description: s.text,
        input_preview: s.text,
      };
      channel.send(permissionRequest(params));
      const approval = await until(
        () => approvalFor(params.request_id),
        () => `the approval for ${params.request_id}; stderr: ${channel.stderr()}`,
      );
      expect(approval.title).toMatch(/^Claude Code wants to use /);
      expect(approval.title).toContain(s.title);
      expect(approval.title).not.toMatch(UNSAFE);
      expect(approval.title).not.toMatch(/[\t\n\r]|\s{2}|\s$/);
      expect(approval.body).toBe(s.body);
      await channel.expectAlive();
    },
  );

  test('hostile text does not stop the verdict from coming back', async () => {
    const params = {
      request_id: requestId(),
      tool_name: STRINGS.stored_as_sent.find((s) => s.name === 'channel-close')!.text,
      description: 'line\r\nbreak',
      input_preview: '\u0000\u001b[2J',
    };
    channel.send(permissionRequest(params));
    const approval = await until(
      () => approvalFor(params.request_id),
      () => `the approval for ${params.request_id}`,
    );
    expect((await server.api(human, 'POST', `/todos/${approval.id}/deny`)).status).toBe(200);
    const verdict = await until(
      () =>
        channel
          .messages()
          .find(
            (m) =>
              m.method === 'notifications/claude/channel/permission' &&
              m.params.request_id === params.request_id,
          ),
      () => `the verdict for ${params.request_id}`,
    );
    expect(verdict.params).toEqual({ request_id: params.request_id, behavior: 'deny' });
  });

  test('regression: an oversize description no longer leaves the prompt unrelayed', async () => {
    const params = {
      request_id: requestId(),
      tool_name: 'T'.repeat(20_000),
      description: 'd'.repeat(200_000),
      input_preview: `x${'😀'.repeat(1_000_000)}`,
    };
    channel.send(permissionRequest(params));
    const approval = await until(
      () => approvalFor(params.request_id),
      () => `the approval for ${params.request_id}; stderr: ${channel.stderr()}`,
    );
    expect(Array.from(approval.title).length).toBeLessThanOrEqual(200);
    expect(approval.title).toMatch(/^Claude Code wants to use TTTT/);
    expect(Array.from(approval.body!)).toHaveLength(4000);
    expect(approval.body).toMatch(/^x😀😀/);
    expect(approval.body).not.toContain('\ufffd'); // no surrogate pair cut in half
    await channel.expectAlive();
  });

  test('extra fields are ignored: the request is relayed', async () => {
    const params = { ...validRequest(), extra: { nested: ['x'] }, source: 'evil' };
    channel.send(permissionRequest(params));
    const approval = await until(
      () => approvalFor(params.request_id),
      () => `the approval for ${params.request_id}`,
    );
    expect(approval.title).toBe('Claude Code wants to use Bash: Run the test suite');
  });
});

describe('tool calls with arguments of the wrong type: isError with a hint, nothing stored', () => {
  let channel: Channel;
  beforeAll(async () => {
    channel = await Channel.start(await agent());
  });
  afterAll(() => channel.stop());

  const CALLS: [string, string, Record<string, unknown>, RegExp][] = [
    ['request_approval', 'no question', {}, /question/],
    ['request_approval', 'a number for question', { question: 42 }, /question/],
    ['request_approval', 'a blank question', { question: '   ' }, /question/],
    ['request_approval', 'an array for question', { question: ['a'] }, /question/],
    ['request_approval', 'a question one over', { question: 'x'.repeat(10_001) }, /question/],
    // These four were dropped without a word, and the approval made without them:
    ['request_approval', 'regression: a number for body', { question: 'ok?', body: 42 }, /body/],
    [
      'request_approval',
      'regression: a string for todo_id',
      { question: 'ok?', todo_id: '5' },
      /todo_id/,
    ],
    [
      'request_approval',
      'regression: a string for ttl_seconds',
      { question: 'ok?', ttl_seconds: '60' },
      /ttl_seconds/,
    ],
    [
      'request_approval',
      'regression: null for ttl_seconds',
      { question: 'ok?', ttl_seconds: null },
      /ttl_seconds/,
    ],
    ['request_approval', 'a negative todo_id', { question: 'ok?', todo_id: -1 }, /todo_id/],
    ['request_approval', 'a fractional todo_id', { question: 'ok?', todo_id: 1.5 }, /todo_id/],
    ['request_approval', 'ttl_seconds 0', { question: 'ok?', ttl_seconds: 0 }, /ttl_seconds/],
    [
      'request_approval',
      'ttl_seconds over a week',
      { question: 'ok?', ttl_seconds: 10_000_000 },
      /ttl_seconds/,
    ],
    ['claim_todo', 'a string for todo_id', { todo_id: 'abc' }, /todo_id/],
    ['claim_todo', 'no todo_id', {}, /todo_id/],
    ['claim_next', 'a number for queue', { queue: 5 }, /queue/],
    ['complete_todo', 'an object for todo_id', { todo_id: { id: 1 } }, /todo_id/],
    ['list_todos', 'a string for limit', { limit: 'ten' }, /limit/],
    ['create_todo', 'null for title', { queue: 'x', title: null }, /title/],
  ];

  test.each(CALLS)('%s, %s', async (name, _, args, hint) => {
    const before = await countRows(server.sql);
    const result = await channel.call(name, args);
    expect(result.isError, result.text).toBe(true);
    expect(result.text).toMatch(hint);
    expect(result.text).not.toMatch(/cannot be reached/);
    expectNothingLeaked(result.text);
    expect(await countRows(server.sql)).toEqual(before);
    await channel.expectAlive();
  });

  test("regression: arguments over the server's 2 MB cap are refused, not called unreachable", async () => {
    const before = await countRows(server.sql);
    // `result` has no length of its own (the channel checks the rest against the tools' schemas).
    const result = await channel.call('complete_todo', {
      todo_id: 1,
      result: 'r'.repeat(3_000_000),
    });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/HTTP 413: .*2 MB.*Fix the arguments/);
    expect(result.text).not.toMatch(/cannot be reached|try again in a minute/i);
    expectNothingLeaked(result.text);
    expect(await countRows(server.sql)).toEqual(before);
    // The tools still work.
    expect((await channel.call('list_todos', {})).isError).toBeFalsy();
  });

  test('an unknown tool is refused as a tool error', async () => {
    const result = await channel.call('drop_tables', { x: 1 });
    expect(result.isError).toBe(true);
    expectNothingLeaked(result.text);
    await channel.expectAlive();
  });

  test.each([
    ['arguments that are a string', { name: 'list_todos', arguments: 'queue=x' }],
    ['arguments that are an array', { name: 'list_todos', arguments: [1] }],
    ['no tool name', { arguments: {} }],
    ['a tool name that is a number', { name: 7 }],
  ])('%s: a JSON-RPC error, not a crash', async (_, params) => {
    const answer = await channel.request('tools/call', params);
    expect(answer.error?.code ?? answer.result?.isError).toBeTruthy();
    expectNothingLeaked(JSON.stringify(answer));
    await channel.expectAlive();
  });
});

test('regression: a token the server refuses is said to be refused, not unreachable', async () => {
  // Refused at start, the channel does not start at all (test/terminal/channel-token-at-start.test.ts);
  // refused while it runs (revoked), its tools say so. The session's status event for a refused
  // token is in that file too: the stream meets the refusal only when it reconnects.
  const who = await agent();
  const channel = await Channel.start(who);
  try {
    expect((await server.api(human, 'POST', `/agents/${who.name}/revoke`)).status).toBe(200);
    const result = await channel.call('list_todos', {});
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/refused this channel's token \(HTTP 401\).*SWITCHBOARD_TOKEN/);
    expectNothingLeaked(result.text);
    await channel.expectAlive();
  } finally {
    await channel.stop();
  }
});

describe('hostile todo text on its way into the session', () => {
  let who: Awaited<ReturnType<typeof agent>>;
  let channel: Channel;
  beforeAll(async () => {
    who = await agent();
    channel = await Channel.start(who);
  });
  afterAll(() => channel.stop());

  const SAFE_META_KEY = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

  /** What Claude Code accepts, and what cannot break out of <channel>…</channel>. */
  function expectSafeEvent(event: { content: string; meta: Record<string, unknown> }) {
    expect(event.content).not.toMatch(UNSAFE);
    expect(event.content).not.toMatch(/[\n\r\t]/);
    expect(Array.from(event.content).length).toBeLessThanOrEqual(300);
    expect(Object.keys(event.meta)).not.toContain('source');
    for (const [key, value] of Object.entries(event.meta)) {
      expect(key).toMatch(SAFE_META_KEY);
      expect(typeof value).toBe('string');
      expect(value).not.toMatch(UNSAFE);
    }
  }

  test('titles sent through the API arrive as one neutralised line each', async () => {
    for (const s of [...STRINGS.stored_as_sent, ...STRINGS.not_storable]) {
      const created = await server.api(human, 'POST', '/todos', {
        queue: who.queue,
        title: s.text,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = String(created.body.todo.id);
      const event = await until(
        () => channel.events().find((e) => e.meta.todo_id === id),
        () => `the event for todo ${id} (${s.name})`,
      );
      expectSafeEvent(event);
      expect(event.content).toBe(`switchboard: todo #${id} on ${who.queue} — ${s.title}`);
    }
    await channel.expectAlive();
  });

  test('regression: a URL holding U+2028 or U+2029 no longer breaks the event stream', async () => {
    // URLs are stored as sent, and JSON leaves both characters unescaped: the channel read its
    // event stream with a regex whose `.` and `$` stop at them, lost the wake and reconnected.
    for (const url of ['https://example.com/a\u2028b', 'https://example.com/c\u2029d']) {
      const created = await server.api(human, 'POST', '/todos', {
        queue: who.queue,
        title: 'separated',
        url,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = String(created.body.todo.id);
      const event = await until(
        () => channel.events().find((e) => e.meta.todo_id === id),
        () => `the event for todo ${id}; stderr: ${channel.stderr()}`,
      );
      expectSafeEvent(event);
      expect(event.meta.url).toBe(url.replace(/[\u2028\u2029]/, ' '));
    }
    expect(channel.stderr()).not.toMatch(/event stream/);
    await channel.expectAlive();
  });

  test('text that never went through ingest is neutralised by the channel itself', async () => {
    for (const s of STRINGS.stored_as_sent) {
      // Straight into the table, as if ingest had missed it: the title as sent but for what its
      // CHECK refuses (C0 and C1 controls), the URL (which goes into meta) as sent.
      // eslint-disable-next-line no-control-regex -- matching control characters is the point
      const title = s.text.replace(/[\u0001-\u001f\u007f-\u009f]/g, '');
      const [row] = await server.sql<{ id: number }[]>`
          insert into todos (queue, kind, title, url, source, attributed_to, available_at)
          values (${who.queue}, 'manual', ${title}, ${`https://example.com/${s.text}`}, 'cli', 'bob', now())
          returning id`;
      const id = String(row!.id);
      const event = await until(
        () => channel.events().find((e) => e.meta.todo_id === id),
        () => `the event for todo ${id} (${s.name})`,
      );
      expectSafeEvent(event);
      expect(event.content).toContain(`#${id}`);
      // What ingest would have stored, the channel sends: the same neutralised line.
      if (title === s.text)
        expect(event.content).toBe(`switchboard: todo #${id} on ${who.queue} — ${s.title}`);
    }
    await channel.expectAlive();
  });
});
