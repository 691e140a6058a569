import { randomBytes } from 'node:crypto';
import type postgres from 'postgres';
import { inject } from 'vitest';
import { migrate } from '../../src/platform/db/migrate.js';
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';

export interface TestDatabase {
  url: string;
  schema: string;
  sql: postgres.Sql;
  /** Another pool on the same schema, e.g. for LISTEN or for a second "process". */
  connect(max?: number): postgres.Sql;
  drop(): Promise<void>;
}

/** A fresh, migrated schema of its own on the run's PostgreSQL. */
export async function createTestDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  const url = inject('databaseUrl');
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const pools: postgres.Sql[] = [];
  const open = (max?: number) => {
    const sql = connect(url, { schema, max, log: silentLogger });
    pools.push(sql);
    return sql;
  };
  const sql = open(options.max);
  await migrate(sql, schema);
  return {
    url,
    schema,
    sql,
    connect: open,
    async drop() {
      await sql.unsafe(`drop schema ${schema} cascade`);
      await Promise.all(pools.map((pool) => pool.end({ timeout: 5 })));
    },
  };
}
