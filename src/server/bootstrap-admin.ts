import { userInfo } from 'node:os';
import type postgres from 'postgres';
import { serverKey, updateCredentialsFile } from '../platform/config/credentials-file.js';
import { authenticateToken, createHuman, issueToken, systemActor } from '../data/index.js';
import { anyHuman, lockBootstrap } from '../data/principals/lock-bootstrap.js';
import type { Logger } from '../platform/logger.js';
import { mintAdminToken } from './mint-admin-token.js';

export interface BootstrapOptions {
  url: string;
  credentialsFile: string;
  log: Logger;
  /**
   * Also on a later start, save an admin token when the credentials file has no entry for this
   * server (the embedded database: its data directory is this user's, who may mint one anyway).
   */
  saveWhenMissing?: boolean;
}

/**
 * First start: with no human in the database, create an admin (named after the OS user) and a
 * token, and add it to the CLI's credentials file as this server's entry, so that the CLI works
 * on this machine at once. The file is written before the transaction commits: if it cannot be
 * written, nothing is created and the next start tries again. Several processes starting at
 * once create one admin.
 *
 * An entry is never replaced: the file keeps one per server URL, and an entry for this URL that
 * is not a token of this server (another data directory served here before) stays as it is.
 */
export async function bootstrapAdmin(
  sql: postgres.Sql,
  { url, credentialsFile, log, saveWhenMissing = false }: BootstrapOptions,
): Promise<{ admin: string } | undefined> {
  const key = serverKey(url)!;
  return sql.begin(async (tx) => {
    await lockBootstrap(tx);
    const any = await anyHuman(tx);
    if (any && !saveWhenMissing) return undefined;
    const created = any
      ? undefined
      : await createHuman(tx, systemActor('bootstrap'), { name: adminName(), is_admin: true });

    const saving = updateCredentialsFile(credentialsFile, async (file) => {
      const entry = file.servers[key];
      if (entry) {
        if (!(await authenticateToken(tx, entry.token))) {
          log.warn(
            { url, credentialsFile },
            `the CLI credentials for ${url} are not this server's (another data directory served there?); kept them — 'switchboard admin token --save' replaces them`,
          );
        }
        return { write: false, cliUses: file.current };
      }
      const minted = created
        ? { admin: created, token: await issueToken(tx, created.id, 'up') }
        : await mintAdminToken(tx, 'up');
      if (!minted) return { write: false, cliUses: file.current };
      file.servers[key] = { token: minted.token };
      file.current ??= key;
      return { write: true, cliUses: file.current };
    });
    // On a first start the file must be written (else nothing is created, and the next start
    // tries again); later, a file that cannot be read or written only means no entry is added.
    const { write, cliUses } = created
      ? await saving
      : await saving.catch((error: unknown) => {
          log.warn(
            { err: error, credentialsFile },
            'could not add this server to the CLI credentials file',
          );
          return { write: false, cliUses: undefined };
        });
    if (write) {
      log.info(
        { url, credentialsFile },
        `${created ? `first start: created the admin ${created.name}; ` : ''}saved admin credentials for ${url}` +
          (cliUses === key
            ? ''
            : `; the CLI still uses ${cliUses} — 'switchboard login --url ${url}' switches to this one`),
      );
    }
    return created && { admin: created.name };
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
