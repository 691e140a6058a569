import { afterAll, beforeAll, expect, test } from 'vitest';
import { createWakeHub } from '../../src/wakes/wake-hub.js';
import { silentLogger } from '../../src/platform/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

// Ctrl-C in a terminal reaches the embedded PostgreSQL too, which may end the hub's LISTEN
// connection before the server closes the hub: `up` then printed a stack trace, said the database
// had gone away, and skipped the rest of its close (so it sometimes never exited).
test('regression: closing the wake hub after its connection was gone threw, and stopped the server’s close half-way', async () => {
  const direct = db.connect(1);
  const hub = await createWakeHub(direct, db.schema, silentLogger);
  await hub.ready;
  await direct.end();
  await expect(hub.close()).resolves.toBeUndefined();
});
