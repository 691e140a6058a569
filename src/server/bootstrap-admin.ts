import { userInfo } from 'node:os';
import type postgres from 'postgres';
import { writeCredentialsFile } from '../config/credentials-file.js';
import { createHuman, issueToken, systemActor } from '../ledger/index.js';
import type { Logger } from '../logger.js';

/**
 * First start: with no human in the database, create an admin (named after the OS user) and a
 * token, and write the CLI's credentials file, so that the CLI works on this machine at once.
 * The file is written before the transaction commits: if it cannot be written, nothing is
 * created and the next start tries again. Several processes starting at once create one admin.
 */
export async function bootstrapAdmin(
  sql: postgres.Sql,
  { url, credentialsFile, log }: { url: string; credentialsFile: string; log: Logger },
): Promise<{ admin: string } | undefined> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended('switchboard.bootstrap', 0))`;
    const [{ any }] = await tx<
      [{ any: boolean }]
    >`select exists (select 1 from principals where kind = 'human') as any`;
    if (any) return undefined;
    const admin = await createHuman(tx, systemActor('bootstrap'), {
      name: adminName(),
      is_admin: true,
    });
    const token = await issueToken(tx, admin.id);
    await writeCredentialsFile(credentialsFile, { url, token });
    log.info(
      { admin: admin.name, credentialsFile },
      'first start: created an admin and wrote the CLI credentials',
    );
    return { admin: admin.name };
  });
}

function adminName(): string {
  const name = userInfo()
    .username.toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 64);
  return name || 'admin';
}
