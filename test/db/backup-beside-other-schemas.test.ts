import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { readTables } from '../../src/platform/db/write-backup.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase({ max: 2 });
});
afterAll(async () => {
  await db?.drop();
});

test('regression: a backup failed ("could not open relation with OID") when another schema of the database dropped a sequence during it', async () => {
  const other = `other_${randomBytes(4).toString('hex')}`;
  await db.sql`create schema ${db.sql(other)}`;
  await db.sql`create table ${db.sql(other)}.things (id bigint generated always as identity)`;
  const tables = await db.sql.begin('isolation level repeatable read read only', async (tx) => {
    // The backup's snapshot still sees the other schema's sequence once it is dropped.
    await tx`select 1`;
    await db.sql`drop schema ${db.sql(other)} cascade`;
    return readTables(tx, db.schema);
  });
  const todos = tables.find((table) => table.table === 'todos');
  expect(todos?.sequences.map((sequence) => sequence.column)).toEqual(['id']);
});
