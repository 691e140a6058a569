import webpush from 'web-push';
import type { Db } from '../../platform/db/open-database.js';

export interface PushKeys {
  /** The VAPID public key, base64url: browsers subscribe with it (`applicationServerKey`). */
  publicKey: string;
  privateKey: string;
}

/**
 * The server's VAPID key pair: made at the first start and kept in the database, so that every
 * process signs alike and subscriptions outlive restarts. Of two processes starting at once, the
 * first insert wins and both read it. Neither key is ever logged.
 */
export async function loadPushKeys(db: Db): Promise<PushKeys> {
  const fresh = webpush.generateVAPIDKeys();
  await db`
    insert into web_push_keys (public_key, private_key)
    values (${fresh.publicKey}, ${fresh.privateKey})
    on conflict (id) do nothing`;
  const [keys] = await db<{ publicKey: string; privateKey: string }[]>`
    select public_key as "publicKey", private_key as "privateKey" from web_push_keys`;
  return keys!;
}
