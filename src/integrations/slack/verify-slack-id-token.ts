import {
  createRemoteJWKSet,
  customFetch,
  errors,
  jwtVerify,
  type FetchImplementation,
  type JWTPayload,
} from 'jose';
import type { Outbound } from '../../platform/egress/create-egress.js';

/** Who Slack's OpenID Connect says signed in: the issuer Slack's discovery document names. */
export const SLACK_ISSUER = 'https://slack.com';

/** What a verified id_token says: the Slack user and the workspace they signed in to. */
export interface SlackIdentity {
  user: string;
  team: string;
}

/** An id_token that does not hold: `reason` says which check failed, in words for a page. */
export class SlackIdTokenRefused extends Error {
  constructor(readonly reason: string) {
    super(`Slack's id_token was refused: ${reason}`);
  }
}

/** Slack's signing keys could not be read: nothing was decided. `detail` is for the log only. */
export class SlackKeysUnavailable extends Error {
  constructor(readonly detail: string) {
    super('Slack’s signing keys could not be read');
  }
}

export interface SlackIdTokenVerifier {
  /** The identity in `idToken` if it is Slack's, for this app and this browser session's nonce. */
  verify(idToken: string, expected: { clientId: string; nonce: string }): Promise<SlackIdentity>;
}

/**
 * Verifies Sign in with Slack's id_token (OpenID Connect Core §3.1.3.7) with jose: signed RS256
 * by a key in Slack's key set, issued by Slack, for this app's client id, not expired, carrying
 * the nonce this browser session sent. The key set is read from `jwksUrl` through the outbound
 * module (no inside address, no redirect) and kept by jose (ten minutes; a new key is looked
 * for at most every 30 s).
 */
export function createSlackIdTokenVerifier({
  jwksUrl,
  outbound,
}: {
  jwksUrl: string;
  outbound: Outbound;
}): SlackIdTokenVerifier {
  const fetchKeys: FetchImplementation = async (url, { signal }) => {
    let answer;
    try {
      answer = await outbound.request(url, { headers: { accept: 'application/json' }, signal });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new SlackKeysUnavailable(error instanceof Error ? error.message : String(error));
    }
    if (answer.status !== 200)
      throw new SlackKeysUnavailable(`${url} answered ${answer.status}, not a key set`);
    try {
      JSON.parse(answer.body);
    } catch {
      throw new SlackKeysUnavailable(`${url} answered 200 with no JSON`);
    }
    return new Response(answer.body, { status: 200 });
  };
  const keys = createRemoteJWKSet(new URL(jwksUrl), { [customFetch]: fetchKeys });
  return {
    async verify(idToken, { clientId, nonce }) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(idToken, keys, {
          issuer: SLACK_ISSUER,
          audience: clientId,
          algorithms: ['RS256'],
          requiredClaims: ['exp', 'iat', 'nonce'],
          // Clocks differ a little between Slack's and this machine.
          clockTolerance: 60,
        }));
      } catch (error) {
        throw refusalOf(error);
      }
      if (payload.nonce !== nonce)
        throw new SlackIdTokenRefused('its nonce is not the one this browser session sent');
      const user = payload['https://slack.com/user_id'];
      const team = payload['https://slack.com/team_id'];
      if (
        typeof user !== 'string' ||
        !/^[UW][A-Z0-9]{2,30}$/.test(user) ||
        typeof team !== 'string'
      )
        throw new SlackIdTokenRefused('it names no Slack user and workspace');
      return { user, team };
    },
  };
}

/** What jose threw, as a refusal a page can say; a key set that could not be read, as such. */
function refusalOf(error: unknown): Error {
  if (error instanceof SlackKeysUnavailable) return error;
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid)
    return new SlackKeysUnavailable(error.message);
  if (error instanceof errors.JWTExpired) return new SlackIdTokenRefused('it has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    const claims: Record<string, string> = {
      iss: 'it was not issued by Slack',
      aud: 'it is for another app',
      nonce: 'its nonce is not the one this browser session sent',
    };
    return new SlackIdTokenRefused(claims[error.claim] ?? `its ${error.claim} claim is wrong`);
  }
  if (
    error instanceof errors.JWSSignatureVerificationFailed ||
    error instanceof errors.JWKSNoMatchingKey
  )
    return new SlackIdTokenRefused('its signature is not one of Slack’s keys');
  if (error instanceof errors.JOSEError) return new SlackIdTokenRefused('it is not a valid token');
  return error instanceof Error ? error : new Error(String(error));
}
