import type postgres from 'postgres';

/**
 * LISTENs for revocations: every revocation of a token, a principal or an OAuth grant, and every
 * console sign-out, NOTIFYs `<schema>.revocations` in its transaction with the row it concerns
 * (migrations 0006, 0024, 0031). `onListen` runs after every (re)LISTEN, since a NOTIFY sent while the
 * connection was down is lost.
 */
export function listenForRevocations(
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql,
  schema: string,
  onRevocation: (payload: string) => void,
  onListen: () => void,
): Promise<postgres.ListenMeta> {
  return direct.listen(`${schema}.revocations`, onRevocation, onListen);
}
