import type postgres from 'postgres';
import { wakeChannel } from '../index.js';

/**
 * LISTENs on the ledger's wake channel (the todos triggers NOTIFY it); `onListen` runs after
 * every (re)LISTEN, since a wake sent while the connection was down is lost. postgres.js
 * re-listens by itself after a lost connection.
 */
export function listenForWakes(
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql,
  schema: string,
  onWake: (payload: string) => void,
  onListen: () => void,
): Promise<postgres.ListenMeta> {
  return direct.listen(wakeChannel(schema), onWake, onListen);
}
