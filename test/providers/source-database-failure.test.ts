import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  addSource,
  giteaHeaders,
  postToSource,
  readSourceFixture,
  setRules,
  type AddedSource,
} from './support/sources.js';

// A source's delivery is answered 2xx only once it is committed: when the database fails or is
// too slow, the provider is told so, nothing is kept, and its retry is the first one recorded.
const INGEST_TIMEOUT_MS = 800;
let server: TestServer;
let source: AddedSource;

beforeAll(async () => {
  server = await startTestServer({ sourcesTuning: { ingestTimeoutMs: INGEST_TIMEOUT_MS } });
  source = await addSource(server, { kind: 'gitea', name: 'code' });
  await setRules(server, 'code', 'trust:\n  logins: [unknwon]\n');
});
afterAll(() => server.stop());

async function deliver(id: string) {
  const body = await readSourceFixture('gitea', 'issue_comment.created.command');
  return postToSource(
    server,
    'code',
    body,
    giteaHeaders('gitea', 'issue_comment', body, source.secret, id),
    id,
  );
}

const stored = async (id: string) => {
  const [row] = await server.sql<[{ deliveries: number; todos: number }]>`
    select (select count(*)::int from deliveries where delivery_id = ${id}) as deliveries,
           (select count(*)::int from todos where idempotency_key like ${`code:${id}:%`}) as todos`;
  return row;
};

test('a write that fails after the todo was made: 500, a clean message, nothing kept', async () => {
  const id = randomUUID();
  await server.sql`alter table deliveries add constraint test_refuses_todos check (todo_id is null)`;
  let sent;
  try {
    sent = await deliver(id);
  } finally {
    await server.sql`alter table deliveries drop constraint test_refuses_todos`;
  }
  expect(sent.status).toBe(500);
  expect(sent.body).toEqual({
    error:
      'the delivery could not be recorded; nothing was stored, so redeliver it later (the server log has the details)',
    code: 'not_recorded',
  });
  expect(await stored(id)).toEqual({ deliveries: 0, todos: 0 });
  // The retry under the same id is the first the ledger knows of it.
  expect((await deliver(id)).status).toBe(200);
  expect(await stored(id)).toEqual({ deliveries: 1, todos: 1 });
});

test('a database that does not answer in time: 503 within the budget, nothing kept', async () => {
  const id = randomUUID();
  const holder = await server.sql.reserve();
  await holder`begin`;
  await holder`lock table deliveries in access exclusive mode`;
  const started = Date.now();
  let sent;
  try {
    sent = await deliver(id);
  } finally {
    await holder`rollback`;
    holder.release();
  }
  expect(sent.status).toBe(503);
  expect(sent.body.code).toBe('not_recorded');
  expect(Date.now() - started).toBeLessThan(INGEST_TIMEOUT_MS + 3000);
  expect(await stored(id)).toEqual({ deliveries: 0, todos: 0 });
});
