import { afterAll, beforeAll, expect, test } from 'vitest';
import { deliver, storedFor } from '../github/deliver.js';
import { isolateFromGitHub } from '../github/github-app.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// A delivery's todo goes in with its row, in one statement, before the row has claimed its id:
// a todo made by a delivery whose id another claimed meanwhile must be undone with it.
let server: TestServer;
beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer();
  // Warmed up (the repository's rules read), so that the deliveries below do run together.
  for (const fixture of ['issue_comment.created.command', 'pull_request.review_requested']) {
    expect((await deliver(server.url, fixture)).status).toBe(200);
  }
});
afterAll(() => server.stop());

const stored = (id: string) => storedFor(server.sql, id);

test('deliveries under one id racing each other make one todo, even about different things', async () => {
  // Different bodies (no replay lock orders them) and different rules (no shared key): only
  // the delivery id holds them apart, and a todo made before its id was found taken is undone.
  const id = crypto.randomUUID();
  const sent = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      deliver(
        server.url,
        i % 2 ? 'pull_request.review_requested' : 'issue_comment.created.command',
        {
          id,
        },
      ),
    ),
  );
  expect(sent.map((delivery) => delivery.status)).toEqual(Array(40).fill(200));
  expect(await stored(id)).toEqual({ deliveries: 40, todos: 1 });
  const [{ linked }] = await server.sql<[{ linked: number }]>`
    select count(*)::int as linked from deliveries d join todos t on t.id = d.todo_id
    where d.delivery_id = ${id} and d.disposition = 'created'`;
  expect(linked).toBe(1);
});
