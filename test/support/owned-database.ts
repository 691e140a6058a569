import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';

export interface OwnedDatabase {
  /** As its owner, who is no superuser. */
  url: string;
  role: string;
  database: string;
  drop(): Promise<void>;
}

/**
 * A database of its own on `serverUrl` (default: the run's PostgreSQL), owned by a new role that
 * is no superuser, as a managed PostgreSQL gives one: for restores, and for moving a server there.
 */
export async function createOwnedDatabase(
  serverUrl: string = inject('databaseUrl'),
): Promise<OwnedDatabase> {
  const suffix = randomBytes(6).toString('hex');
  const role = `owner_${suffix}`;
  const database = `owned_${suffix}`;
  const password = randomBytes(12).toString('hex');
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(
      `create role ${role} login password '${password}' nosuperuser nocreatedb nocreaterole`,
    );
    await admin.unsafe(`create database ${database} owner ${role}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.username = role;
  url.password = password;
  url.pathname = `/${database}`;
  return {
    url: url.href,
    role,
    database,
    async drop() {
      const sql = postgres(serverUrl, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`drop database if exists ${database} with (force)`);
        await sql.unsafe(`drop role if exists ${role}`);
      } finally {
        await sql.end();
      }
    },
  };
}
