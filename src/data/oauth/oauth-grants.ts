import { randomBytes, randomInt } from 'node:crypto';
import type { Db } from '../../platform/db/open-database.js';
import type { Actor, Principal } from '../actor.js';
import { forbidden, invalid, notFound } from '../ledger-error.js';
import { CLI_CLIENT_ID, type OAuthClientMetadata } from './oauth-clients.js';
import { hashToken, issueToken, principalHolds } from '../principals/tokens.js';

/**
 * OAuth grants and what leads to them (migration 0031): an authorization a client asked for, the
 * human's decision on the console, the code or device code exchanged once for tokens, refresh
 * tokens that rotate, and revocation. The HTTP side (src/surfaces/oauth) only translates.
 */

/** A human has this long to answer a client's request (signing in first, perhaps). */
export const REQUEST_SECONDS = 15 * 60;
/** An authorization code is exchanged within this long of the human's yes, or never. */
export const CODE_SECONDS = 120;
/** A device code (RFC 8628) waits this long for the human to type its user code. */
export const DEVICE_CODE_SECONDS = 10 * 60;
/** An MCP client's access token: short, so a leaked one is worth little; refreshing is cheap. */
export const ACCESS_TOKEN_SECONDS = 60 * 60;
/** A refresh token not used for this long ends its grant's sign-in (each use gives a new one). */
export const REFRESH_TOKEN_SECONDS = 30 * 24 * 60 * 60;

export type AuthorizationStatus = 'requested' | 'approved' | 'denied' | 'exchanged';

export interface Authorization {
  id: string;
  flow: 'code' | 'device';
  client_id: string;
  resource: string;
  status: AuthorizationStatus;
  redirect_uri: string | null;
  redirect_uri_sent: boolean | null;
  code_challenge: string | null;
  state: string | null;
  user_code: string | null;
  grant_id: number | null;
  created_at: Date;
  expires_at: Date;
}

/** An authorization as the consent page shows it: with its client's name and metadata. */
export interface AuthorizationRequest extends Authorization {
  client_source: string;
  client_metadata: OAuthClientMetadata;
  /** Whether the request may still be answered (requested, and not expired). */
  open: boolean;
}

export interface Grant {
  id: number;
  client_id: string;
  principal_id: number;
  principal_kind: 'human' | 'agent';
  granted_by: number;
  resource: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** What a client gets at the token endpoint. */
export interface GrantTokens {
  access_token: string;
  token_type: 'Bearer';
  expires_in?: number;
  refresh_token?: string;
}

const newId = () => randomBytes(16).toString('base64url');
const newSecret = (prefix: string) => prefix + randomBytes(32).toString('base64url');
/** Letters that cannot be misread for one another or spell much (RFC 8628 §6.1). */
const USER_CODE_LETTERS = 'BCDFGHJKLMNPQRSTVWXZ';

/** Finished authorizations are kept a day (a client may ask why its code failed), then dropped. */
async function pruneAuthorizations(db: Db): Promise<void> {
  await db`delete from oauth_authorizations where expires_at < now() - interval '1 day'`;
}

export interface CodeRequest {
  clientId: string;
  resource: string;
  redirectUri: string;
  redirectUriSent: boolean;
  codeChallenge: string;
  state: string | undefined;
}

/** A client's authorization request (code flow), waiting for its human: the consent page's id. */
export async function requestAuthorization(db: Db, request: CodeRequest): Promise<string> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(request.codeChallenge))
    throw invalid('code_challenge must be the 43-character base64url SHA-256 of the verifier');
  if (request.state !== undefined && request.state.length > 1024)
    throw invalid('state is longer than 1024 characters');
  await pruneAuthorizations(db);
  const id = newId();
  await db`
    insert into oauth_authorizations
      (id, flow, client_id, resource, redirect_uri, redirect_uri_sent, code_challenge, state, expires_at)
    values (${id}, 'code', ${request.clientId}, ${request.resource}, ${request.redirectUri},
      ${request.redirectUriSent}, ${request.codeChallenge}, ${request.state ?? null},
      now() + make_interval(secs => ${REQUEST_SECONDS}))`;
  return id;
}

/** A device authorization (RFC 8628): the device code for the client, the user code for its human. */
export async function requestDeviceAuthorization(
  db: Db,
  { clientId, resource }: { clientId: string; resource: string },
): Promise<{ deviceCode: string; userCode: string; expiresIn: number }> {
  await pruneAuthorizations(db);
  const deviceCode = newSecret('sbd_');
  const userCode = Array.from(
    { length: 8 },
    () => USER_CODE_LETTERS[randomInt(USER_CODE_LETTERS.length)],
  ).join('');
  await db`
    insert into oauth_authorizations (id, flow, client_id, resource, device_code_hash, user_code, expires_at)
    values (${newId()}, 'device', ${clientId}, ${resource}, ${hashToken(deviceCode)}, ${userCode},
      now() + make_interval(secs => ${DEVICE_CODE_SECONDS}))`;
  return { deviceCode, userCode, expiresIn: DEVICE_CODE_SECONDS };
}

/** The request behind a consent page, with its client. */
export async function findAuthorization(
  db: Db,
  id: string,
): Promise<AuthorizationRequest | undefined> {
  if (!/^[A-Za-z0-9_-]{22}$/.test(id)) return undefined;
  const [found] = await db<AuthorizationRequest[]>`
    select a.*, c.source as client_source, c.metadata as client_metadata,
      a.status = 'requested' and a.expires_at > now() as open
    from oauth_authorizations a join oauth_clients c using (client_id)
    where a.id = ${id}`;
  return found;
}

/** The open device authorization a user code names (typed as `BCDF-GHJK`, any case, any dashes). */
export async function findDeviceAuthorization(
  db: Db,
  typed: string,
): Promise<{ id: string } | undefined> {
  const userCode = typed.toUpperCase().replace(/[\s-]/g, '');
  if (!/^[B-Z]{8}$/.test(userCode)) return undefined;
  const [found] = await db<{ id: string }[]>`
    select id from oauth_authorizations
    where user_code = ${userCode} and flow = 'device' and status = 'requested' and expires_at > now()`;
  return found;
}

/**
 * The human's yes: a grant for `agent` (one of theirs), or for the human themself when the client
 * is switchboard's CLI, and for the code flow a code to redirect with. One guarded statement:
 * a request answered twice (two tabs) is approved once.
 */
export async function approveAuthorization(
  db: Db,
  actor: Actor,
  id: string,
  agent: string | undefined,
): Promise<{ grant: Grant; code: string | undefined; authorization: Authorization }> {
  if (actor.kind !== 'human') throw forbidden('only a human may let a client in');
  const request = await findAuthorization(db, id);
  if (!request) throw notFound('no such sign-in request');
  if (!request.open)
    throw invalid('this sign-in request was already answered or has expired: start it again');
  const cli = request.client_id === CLI_CLIENT_ID;
  let principal: Pick<Principal, 'id' | 'kind'>;
  if (cli) {
    principal = actor.principal;
  } else {
    if (!agent) throw invalid('choose the agent this client works as');
    const [owned] = await db<Principal[]>`
      select * from principals
      where name = ${agent} and kind = 'agent' and owner = ${actor.name} and revoked_at is null`;
    if (!owned) throw notFound(`you have no agent named ${agent}`);
    principal = owned;
  }
  const code = request.flow === 'code' ? newSecret('sbc_') : undefined;
  const [approved] = await db<(Authorization & { grant: Grant })[]>`
    with g as (
      insert into oauth_grants (client_id, principal_id, principal_kind, granted_by, resource)
      select client_id, ${principal.id}, ${principal.kind}, ${actor.principal.id}, resource
      from oauth_authorizations
      where id = ${id} and status = 'requested' and expires_at > now()
      returning *
    )
    update oauth_authorizations a set
      status = 'approved', decided_at = now(), grant_id = g.id,
      code_hash = ${code === undefined ? null : hashToken(code)},
      expires_at = case when a.flow = 'code'
        then now() + make_interval(secs => ${CODE_SECONDS}) else a.expires_at end
    from g
    where a.id = ${id}
    returning a.*, row_to_json(g.*) as "grant"`;
  if (!approved)
    throw invalid('this sign-in request was already answered or has expired: start it again');
  const { grant, ...authorization } = approved;
  return { grant: grantFromJson(grant), code, authorization };
}

/** The human's no. */
export async function denyAuthorization(db: Db, actor: Actor, id: string): Promise<Authorization> {
  if (actor.kind !== 'human') throw forbidden('only a human may answer a sign-in request');
  const [denied] = await db<Authorization[]>`
    update oauth_authorizations set status = 'denied', decided_at = now()
    where id = ${id} and status = 'requested' and expires_at > now()
    returning *`;
  if (!denied)
    throw invalid('this sign-in request was already answered or has expired: start it again');
  return denied;
}

/** Why a code cannot be exchanged, in words a client's developer can act on. */
const CODE_REFUSED =
  'the authorization code is unknown, expired, already used, or was issued to another client';

/**
 * A code or refresh token presented again after its one use has leaked (or its client is
 * confused): its grant, and every token issued under it, ended just now (RFC 9700 §4.14.2,
 * OAuth 2.1 §4.1.3), whoever presented it. The request is refused all the same; a caller in a
 * transaction commits it first, so that the ending holds.
 */
export interface Replayed {
  replayed: Grant;
  reason: string;
}

/** Ends the grant a replayed code or refresh token belongs to; refused if it had already ended. */
async function endReplayedGrant(
  db: Db,
  grantId: number,
  reason: string,
  refused: string,
): Promise<Replayed> {
  const grant = await endGrant(db, grantId);
  if (!grant) throw invalid(refused);
  return { replayed: grant, reason };
}

const CODE_REPLAYED =
  'the authorization code was already used: the sign-in it gave is revoked; sign in again';

/**
 * The PKCE challenge of a code that may still be exchanged by this client (nothing is changed),
 * or the end of its grant when it was exchanged already.
 */
export async function codeChallengeFor(
  db: Db,
  clientId: string,
  code: string,
): Promise<string | Replayed> {
  const [found] = await db<Authorization[]>`
    select * from oauth_authorizations
    where code_hash = ${hashToken(code)}
      and (status = 'exchanged' or (client_id = ${clientId} and status = 'approved'
        and expires_at > now()))`;
  if (!found) throw invalid(CODE_REFUSED);
  if (found.status === 'exchanged')
    return endReplayedGrant(db, found.grant_id!, CODE_REPLAYED, CODE_REFUSED);
  return found.code_challenge!;
}

/**
 * Exchanges a code (its PKCE verifier already checked) for its grant, once: the redirect URI
 * must be the one it was issued for (when the request named one) and the resource its grant's.
 * A code exchanged meanwhile (two requests at once) ends its grant.
 */
export async function exchangeCode(
  db: Db,
  {
    clientId,
    code,
    redirectUri,
    resource,
  }: { clientId: string; code: string; redirectUri?: string; resource?: string },
): Promise<Grant | Replayed> {
  const [found] = await db<Authorization[]>`
    select * from oauth_authorizations
    where code_hash = ${hashToken(code)} and client_id = ${clientId} and status = 'approved'
      and expires_at > now()`;
  if (!found) throw invalid(CODE_REFUSED);
  if (redirectUri === undefined ? found.redirect_uri_sent : redirectUri !== found.redirect_uri)
    throw invalid('redirect_uri is not the one the code was issued for');
  if (resource !== undefined && !sameResource(resource, found.resource))
    throw invalid(`the code was issued for the resource ${found.resource}, not ${resource}`);
  return (
    (await exchangeOnce(db, found.id)) ??
    endReplayedGrant(db, found.grant_id!, CODE_REPLAYED, CODE_REFUSED)
  );
}

/** The device flow's poll (RFC 8628 §3.4): the grant once the human said yes, else why not yet. */
export async function exchangeDeviceCode(
  db: Db,
  { clientId, deviceCode }: { clientId: string; deviceCode: string },
): Promise<Grant | 'authorization_pending' | 'slow_down' | 'access_denied' | 'expired_token'> {
  const [found] = await db<(Authorization & { too_soon: boolean })[]>`
    with before as (
      select id, polled_at from oauth_authorizations
      where device_code_hash = ${hashToken(deviceCode)} and client_id = ${clientId}
        and flow = 'device'
      for update
    )
    update oauth_authorizations a set polled_at = now()
    from before
    where a.id = before.id
    returning a.*, coalesce(before.polled_at > now() - make_interval(secs => ${DEVICE_POLL_SECONDS - 1}), false) as too_soon`;
  if (!found || found.status === 'exchanged')
    throw invalid('the device code is unknown, already used, or was issued to another client');
  if (found.status === 'denied') return 'access_denied';
  if (found.expires_at.getTime() <= Date.now()) return 'expired_token';
  if (found.status === 'requested') return found.too_soon ? 'slow_down' : 'authorization_pending';
  const grant = await exchangeOnce(db, found.id);
  if (!grant) throw invalid(CODE_REFUSED);
  return grant;
}

/** How often a device may poll (RFC 8628 `interval`); faster is answered `slow_down`. */
export const DEVICE_POLL_SECONDS = 5;

/** The authorization's grant, if it was still to be exchanged (and its grant is live). */
async function exchangeOnce(db: Db, id: string): Promise<Grant | undefined> {
  const [grant] = await db<Grant[]>`
    with a as (
      update oauth_authorizations set status = 'exchanged', exchanged_at = now()
      where id = ${id} and status = 'approved' and expires_at > now()
      returning grant_id
    )
    select g.* from a join oauth_grants g on g.id = a.grant_id where g.revoked_at is null`;
  return grant;
}

/**
 * Tokens for a grant just exchanged or refreshed: for a client on /mcp a short-lived access token
 * and a refresh token; for the CLI one token that lasts until it is revoked (`switchboard logout`),
 * as a token from `agent add` does.
 */
export async function issueGrantTokens(db: Db, grant: Grant): Promise<GrantTokens> {
  // A client refreshes hourly for as long as it is signed in: what it no longer holds goes. A
  // used refresh token stays until it would have expired, so that its replay is recognised.
  await db`
    delete from tokens
    where grant_id = ${grant.id} and expires_at < now() - interval '1 day'`;
  await db`delete from oauth_refresh_tokens where grant_id = ${grant.id} and expires_at < now()`;
  if (grant.principal_kind === 'human') {
    return {
      access_token: await issueToken(db, grant.principal_id, 'login', {
        id: grant.id,
        expiresInSeconds: null,
      }),
      token_type: 'Bearer',
    };
  }
  const refresh = newSecret('sbr_');
  await db`
    insert into oauth_refresh_tokens (grant_id, hash, expires_at)
    values (${grant.id}, ${hashToken(refresh)}, now() + make_interval(secs => ${REFRESH_TOKEN_SECONDS}))`;
  return {
    access_token: await issueToken(db, grant.principal_id, 'oauth', {
      id: grant.id,
      expiresInSeconds: ACCESS_TOKEN_SECONDS,
    }),
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_SECONDS,
    refresh_token: refresh,
  };
}

const REFRESH_REFUSED =
  'the refresh token is unknown, expired, revoked, or was issued to another client';
const REFRESH_REPLAYED =
  'the refresh token was already used: the sign-in it belongs to is revoked; sign in again';

/**
 * Uses a refresh token once (it rotates: the tokens issued now carry the next one). Refused, with
 * nothing changed, when it is unknown, expired, another client's, for another resource, or its
 * grant or principal (or an agent's owner) was revoked; one used already ends its grant.
 */
export async function useRefreshToken(
  db: Db,
  {
    clientId,
    refreshToken,
    resource,
  }: { clientId: string; refreshToken: string; resource?: string },
): Promise<Grant | Replayed> {
  const hash = hashToken(refreshToken);
  const [found] = await db<(Grant & { used: boolean })[]>`
    select g.*, r.used_at is not null as used from oauth_refresh_tokens r
    join oauth_grants g on g.id = r.grant_id
    join principals p on p.id = g.principal_id
    where r.hash = ${hash} and r.expires_at > now()
      and g.revoked_at is null and ${principalHolds(db)}`;
  if (!found) throw invalid(REFRESH_REFUSED);
  const { used, ...grant } = found;
  if (used) return endReplayedGrant(db, grant.id, REFRESH_REPLAYED, REFRESH_REFUSED);
  if (grant.client_id !== clientId) throw invalid(REFRESH_REFUSED);
  if (resource !== undefined && !sameResource(resource, grant.resource))
    throw invalid(
      `the refresh token was issued for the resource ${grant.resource}, not ${resource}`,
    );
  const [rotated] = await db`
    update oauth_refresh_tokens set used_at = now()
    where hash = ${hash} and used_at is null
    returning id`;
  // Used meanwhile, by a request at the same moment: a replay all the same.
  if (!rotated) return endReplayedGrant(db, grant.id, REFRESH_REPLAYED, REFRESH_REFUSED);
  await db`update oauth_grants set last_used_at = now() where id = ${grant.id}`;
  return grant;
}

/**
 * Revocation at the client's request (RFC 7009): a token of one of its grants (access or refresh)
 * ends the whole grant, whose id is returned. `unknown` for a token that is not (or no longer)
 * valid: the endpoint says 200 all the same; `other_client` for a token the client holds but did
 * not get as itself (another client's, or a static token).
 */
export async function revokeGrantByToken(
  db: Db,
  clientId: string,
  token: string,
): Promise<number | 'unknown' | 'other_client'> {
  const hash = hashToken(token);
  const [found] = await db<{ grant_id: number | null; client_id: string | null }[]>`
    select t.grant_id, g.client_id from tokens t left join oauth_grants g on g.id = t.grant_id
    where t.hash = ${hash} and t.revoked_at is null
    union all
    select r.grant_id, g.client_id from oauth_refresh_tokens r join oauth_grants g on g.id = r.grant_id
    where r.hash = ${hash}`;
  if (!found) return 'unknown';
  if (found.client_id !== clientId) return 'other_client';
  return (await endGrant(db, found.grant_id!))?.id ?? 'unknown';
}

/** Ends a grant and every token issued under it, at once (each process hears it: migration 0031). */
async function endGrant(db: Db, grantId: number): Promise<Grant | undefined> {
  const [grant] = await db<Grant[]>`
    with g as (
      update oauth_grants set revoked_at = now() where id = ${grantId} and revoked_at is null
      returning *
    ), t as (
      update tokens set revoked_at = now()
      from g where tokens.grant_id = g.id and tokens.revoked_at is null
    )
    select * from g`;
  return grant;
}

/** A grant as the console lists it: who acts as whom, for which client, and when last used. */
export interface GrantListing extends Grant {
  client_name: string;
  principal_name: string;
  granted_by_name: string;
}

/**
 * The live grants a human may see and revoke: those acting as them or one of their agents (an
 * admin: everyone's).
 */
export async function listGrants(db: Db, actor: Actor): Promise<GrantListing[]> {
  if (actor.kind !== 'human') return [];
  const scope = actor.principal.is_admin
    ? db`true`
    : db`(p.name = ${actor.name} or p.owner = ${actor.name})`;
  return db<GrantListing[]>`
    select g.*, coalesce(c.metadata->>'client_name', g.client_id) as client_name,
      p.name as principal_name, h.name as granted_by_name
    from oauth_grants g
    join oauth_clients c on c.client_id = g.client_id
    join principals p on p.id = g.principal_id
    join principals h on h.id = g.granted_by
    where g.revoked_at is null and p.revoked_at is null and ${scope}
    order by g.id desc`;
}

/** A human revokes a grant from the console: their own, one of their agents', or (admins) any. */
export async function revokeGrant(db: Db, actor: Actor, grantId: number): Promise<Grant> {
  const visible = (await listGrants(db, actor)).some((grant) => grant.id === grantId);
  if (!visible) throw notFound(`no sign-in #${grantId} of yours or your agents'`);
  const grant = await endGrant(db, grantId);
  if (!grant) throw notFound(`sign-in #${grantId} was already revoked`);
  return grant;
}

/** Resource indicators compare as URLs do, without a fragment and one trailing slash. */
export function sameResource(a: string, b: string): boolean {
  const plain = (url: string) => url.replace(/#.*$/, '').replace(/\/$/, '');
  return plain(a) === plain(b);
}

function grantFromJson(row: Grant): Grant {
  const date = (value: unknown) => (value == null ? null : new Date(value as string));
  return {
    ...row,
    created_at: new Date(row.created_at),
    last_used_at: date(row.last_used_at),
    revoked_at: date(row.revoked_at),
  };
}

/** Which of these grants were revoked. */
export async function revokedGrants(db: Db, grantIds: number[]): Promise<number[]> {
  const revoked = await db<{ id: number }[]>`
    select id from oauth_grants where id = any(${grantIds}::bigint[]) and revoked_at is not null`;
  return revoked.map((row) => row.id);
}
