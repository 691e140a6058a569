import { createHash, randomInt } from 'node:crypto';
import postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import {
  conflict,
  forbidden,
  invalid,
  notFound,
  type Actor,
  type Principal,
} from '../../data/index.js';

/** How long a link code may wait to be sent to the bot. */
export const LINK_CODE_TTL_SECONDS = 600;
/** No 0/O, 1/I/L: a code is read off one screen and typed into another. */
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
const CODE = /\b([A-HJKMNP-Z2-9]{4})-?([A-HJKMNP-Z2-9]{4})\b/;

export interface SlackLink {
  team_id: string;
  slack_user_id: string;
  linked_via: 'code' | 'sign_in';
  channel_id: string | null;
  linked_at: Date;
}

const hashOf = (code: string) => createHash('sha256').update(code).digest();

/**
 * A one-time code for the human to send the bot in a direct message (`switchboard slack link`):
 * 40 bits, alive ten minutes, stored as its hash; a newer code replaces the last.
 */
export async function createLinkCode(
  db: Db,
  actor: Actor,
): Promise<{ code: string; expires_at: Date }> {
  if (actor.kind !== 'human')
    throw forbidden('only a human links a Slack user; agents never decide');
  const letters = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]!).join('');
  const code = `${letters.slice(0, 4)}-${letters.slice(4)}`;
  const [row] = await db<{ expires_at: Date }[]>`
    insert into slack_link_codes (principal_id, hash, expires_at)
    values (${actor.principal.id}, ${hashOf(letters)},
            now() + make_interval(secs => ${LINK_CODE_TTL_SECONDS}))
    on conflict (principal_id) do update set hash = excluded.hash, expires_at = excluded.expires_at
    returning expires_at`;
  return { code, expires_at: row!.expires_at };
}

/** The code in a direct message's text, if it holds one (spaces and case forgiven). */
export function codeIn(text: string): string | null {
  const match = CODE.exec(text.toUpperCase());
  return match ? `${match[1]}${match[2]}` : null;
}

/**
 * Links the Slack user who sent the code to the human it was made for (in place of any Slack user
 * linked before: the code shows the human wants this one), and uses the code up. A Slack user
 * linked to another human is refused: that human unlinks first. Returns the human, or null for a
 * code that is unknown or expired.
 */
export async function redeemLinkCode(
  sql: postgres.Sql,
  code: string,
  slack: { team_id: string; user_id: string },
): Promise<Principal | null> {
  return sql.begin(async (tx) => {
    const [human] = await tx<Principal[]>`
      with used as (
        delete from slack_link_codes where hash = ${hashOf(code)} returning principal_id, expires_at
      )
      select p.* from used join principals p on p.id = used.principal_id
      where used.expires_at > now() and p.revoked_at is null`;
    if (!human) return null;
    await insertLink(tx, human.id, slack.team_id, slack.user_id, 'code');
    return human;
  });
}

/** Sign in with Slack vouched for this Slack user: it is linked to the human signed in. */
export async function linkSignedIn(
  db: Db,
  actor: Actor,
  slack: { team_id: string; user_id: string },
): Promise<void> {
  if (actor.kind !== 'human') throw forbidden('only a human links a Slack user');
  await insertLink(db, actor.principal.id, slack.team_id, slack.user_id, 'sign_in');
}

async function insertLink(
  db: Db,
  principalId: number,
  teamId: string,
  userId: string,
  via: SlackLink['linked_via'],
): Promise<void> {
  try {
    await db`
      insert into slack_links (principal_id, team_id, slack_user_id, linked_via)
      values (${principalId}, ${teamId}, ${userId}, ${via})
      on conflict (principal_id) do update set team_id = excluded.team_id,
        slack_user_id = excluded.slack_user_id, linked_via = excluded.linked_via,
        channel_id = null, linked_at = now()`;
  } catch (error) {
    if (error instanceof postgres.PostgresError && error.code === '23505') {
      throw conflict(
        'this Slack user is linked to another switchboard human: they unlink it first',
      );
    }
    throw error;
  }
}

/** The human a Slack user is linked to in this workspace (not revoked), if any. */
export async function linkedHuman(
  db: Db,
  slack: { team_id: string; user_id: string },
): Promise<Principal | null> {
  const [human] = await db<Principal[]>`
    select p.* from slack_links l join principals p on p.id = l.principal_id
    where l.team_id = ${slack.team_id} and l.slack_user_id = ${slack.user_id}
      and p.kind = 'human' and p.revoked_at is null`;
  return human ?? null;
}

export async function linkOf(db: Db, actor: Actor): Promise<SlackLink | null> {
  if (actor.kind !== 'human') return null;
  const [link] = await db<SlackLink[]>`
    select team_id, slack_user_id, linked_via, channel_id, linked_at
    from slack_links where principal_id = ${actor.principal.id}`;
  return link ?? null;
}

/** Unlinks at once: the next press from that Slack user decides nothing. */
export async function unlink(db: Db, actor: Actor): Promise<void> {
  if (actor.kind !== 'human') throw forbidden('only a human has a Slack link');
  const [row] =
    await db`delete from slack_links where principal_id = ${actor.principal.id} returning 1`;
  if (!row) throw notFound('your switchboard human is not linked to a Slack user');
}

const CHANNEL = /^[CG][A-Z0-9]{2,30}$/;

/** Where the human's approvals go: a channel (the bot must be in it), or null for a direct message. */
export async function setApprovalChannel(
  db: Db,
  actor: Actor,
  channel: string | null,
): Promise<void> {
  if (actor.kind !== 'human') throw forbidden('only a human has a Slack link');
  if (channel !== null && !CHANNEL.test(channel)) {
    throw invalid(
      "a channel is Slack's id of it, such as C0123ABCD (the channel's details show it)",
    );
  }
  const [row] = await db`
    update slack_links set channel_id = ${channel} where principal_id = ${actor.principal.id} returning 1`;
  if (!row) throw notFound('link your Slack user first: switchboard slack link');
}
