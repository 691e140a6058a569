// A child process (forked by mock-messages-api.ts): Anthropic's Messages API as Claude Code
// reaches it at ANTHROPIC_BASE_URL, answering scripted turns and reporting every request to its
// parent over IPC, before it answers, so the parent has heard of it by the time Claude Code has.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Block, FromMock, RecordedRequest, ToMock } from './mock-messages-api.js';

const send = (message: FromMock) => process.send!(message);
/** The turns left to answer, per Claude Code session (the `x-claude-code-session-id` header). */
const scripts = new Map<string, Block[][]>();
let toolUses = 0;

process.on('message', (message: ToMock) => {
  if (message.type === 'script') scripts.set(message.sessionId, [...message.turns]);
  send({ type: 'done', id: message.id });
});
// The parent gone (its IPC channel closed), nothing is left to answer for.
process.on('disconnect', () => process.exit(0));

function events(model: string, blocks: Block[]): [string, Record<string, unknown>][] {
  const id = `msg_mock_${Date.now().toString(36)}`;
  const out: [string, Record<string, unknown>][] = [
    [
      'message_start',
      {
        message: {
          ...{ id, type: 'message', role: 'assistant', model, content: [] },
          ...{ stop_reason: null, stop_sequence: null },
          usage: { input_tokens: 10, output_tokens: 1 },
        },
      },
    ],
    ['ping', {}],
  ];
  blocks.forEach((block, index) => {
    if (block.type === 'text') {
      out.push(['content_block_start', { index, content_block: { type: 'text', text: '' } }]);
      out.push(['content_block_delta', { index, delta: { type: 'text_delta', text: block.text } }]);
    } else {
      const content_block = { type: 'tool_use', id: block.id, name: block.name, input: {} };
      out.push(['content_block_start', { index, content_block }]);
      // As the API streams it: an empty first chunk, then the JSON in pieces.
      const json = JSON.stringify(block.input);
      const half = Math.ceil(json.length / 2);
      for (const partial_json of ['', json.slice(0, half), json.slice(half)])
        out.push([
          'content_block_delta',
          { index, delta: { type: 'input_json_delta', partial_json } },
        ]);
    }
    out.push(['content_block_stop', { index }]);
  });
  const stop_reason = blocks.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn';
  out.push([
    'message_delta',
    { delta: { stop_reason, stop_sequence: null }, usage: { output_tokens: 5 } },
  ]);
  out.push(['message_stop', {}]);
  return out.map(([type, data]) => [type, { type, ...data }]);
}

/** The next scripted turn of the session, tool-use ids given; a plain "done" past its end. */
function nextTurn(sessionId: string | undefined): { blocks: Block[]; scripted: boolean } {
  const turn = sessionId === undefined ? undefined : scripts.get(sessionId)?.shift();
  if (!turn) return { blocks: [{ type: 'text', text: 'done' }], scripted: false };
  const blocks = turn.map((block) =>
    block.type === 'tool_use' ? { ...block, id: block.id ?? `toolu_mock_${++toolUses}` } : block,
  );
  return { blocks, scripted: true };
}

function answerMessages(req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>) {
  const header = req.headers['x-claude-code-session-id'];
  const { blocks, scripted } = nextTurn(typeof header === 'string' ? header : undefined);
  const model = typeof body.model === 'string' ? body.model : 'claude-mock';
  const record: RecordedRequest = { ...describe(req), body, answer: blocks, scripted };
  send({ type: 'request', request: record });
  const stream = events(model, blocks);
  if (body.stream !== true) {
    // The same message, whole: what a non-streaming request is answered with.
    const start = stream[0]![1].message as Record<string, unknown>;
    const stop = stream.find(([type]) => type === 'message_delta')![1].delta as object;
    return json(res, 200, { ...start, ...stop, content: blocks });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [type, data] of stream) res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  res.end();
}

function describe(req: IncomingMessage): Pick<RecordedRequest, 'method' | 'path' | 'headers'> {
  const headers = { ...req.headers };
  delete headers['x-api-key'];
  return { method: req.method ?? '', path: req.url ?? '', headers };
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    let body: Record<string, unknown>;
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      return json(res, 400, {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'not JSON' },
      });
    }
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'POST' && path === '/v1/messages') return answerMessages(req, res, body);
    // Everything else is unexpected with nonessential traffic off: reported, answered plainly.
    send({ type: 'unknown', request: { ...describe(req), body, answer: [], scripted: false } });
    if (path === '/v1/messages/count_tokens') return json(res, 200, { input_tokens: 10 });
    if (path === '/api/hello') return json(res, 200, {});
    if (path === '/v1/models') return json(res, 200, { data: [], has_more: false });
    json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no ${path}` } });
  });
});
server.listen(0, '127.0.0.1', () => {
  send({ type: 'listening', port: (server.address() as AddressInfo).port });
});
