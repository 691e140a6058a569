import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

test('smoke: whoami, create, claim, complete', async () => {
  const { api, adminToken } = server;
  expect((await api(adminToken, 'GET', '/whoami')).body.principal).toMatchObject({
    kind: 'human',
    is_admin: true,
  });
  const created = await api(adminToken, 'POST', '/todos', { queue: 'reviews', title: 'hello' });
  expect(created.status).toBe(201);
  const claimed = await api(adminToken, 'POST', '/queues/reviews/claim');
  expect(claimed.body.todo.id).toBe(created.body.todo.id);
  const done = await api(adminToken, 'POST', `/todos/${created.body.todo.id}/complete`, {
    lease_token: claimed.body.todo.lease_token,
    summary: 'ok',
  });
  expect(done.body.todo.state).toBe('done');
});
