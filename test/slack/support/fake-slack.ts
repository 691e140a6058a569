import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

/** One Web API call the fake received: the method, its arguments (JSON fields parsed), the token. */
export interface SlackCall {
  method: string;
  args: Record<string, any>;
  token: string | null;
  /** What the fake answered (undefined while it hangs). */
  answer?: any;
}

/** What the fake answers one call with: a status, headers, a JSON body; or never (`hang`). */
export interface SlackAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  hang?: boolean;
}

export const TEAM = 'T0SWITCH1';
export const OTHER_TEAM = 'T0ELSEWHR';
export const BOT_USER = 'U0BOTUSER';
export const BOT_TOKEN = 'xoxb-1111111111-2222222222-abcdefghijABCDEFGHIJabcd';
export const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5'.replace(/[yz]/g, 'e');

/** Signs an id_token as Slack does (RS256, its key's `kid`), with the claims given. */
export type IdTokenSigner = (claims: JWTPayload, key?: 'slack' | 'impostor') => Promise<string>;

/** Slack's signing key pair and its key set; a second pair, an impostor's with the same `kid`. */
async function slackKeys(): Promise<{ jwks: unknown; sign: IdTokenSigner }> {
  const kid = 'mB2MAyKSn555isd0EbdhKx6nkyAi9xLq8rvCEb_nOyY';
  const [slack, impostor] = await Promise.all([generateKeyPair('RS256'), generateKeyPair('RS256')]);
  const jwks = { keys: [{ ...(await exportJWK(slack.publicKey)), kid, alg: 'RS256', use: 'sig' }] };
  const sign: IdTokenSigner = (claims, key = 'slack') =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
      .sign((key === 'slack' ? slack : impostor).privateKey);
  return { jwks, sign };
}

/**
 * A Slack Web API on a loopback port (SWITCHBOARD_SLACK_API_URL points at it): it answers every
 * method as Slack documents it, records each call, and answers as told (`answerNext`) — a 429
 * with Retry-After, a 5xx, Slack's `{ok: false, error}`, or no answer at all. Beside it, as on
 * slack.com, Sign in with Slack's key set (`/openid/connect/keys`); `idToken` signs as Slack.
 */
export async function startFakeSlack(): Promise<{
  url: string;
  calls: SlackCall[];
  callsTo(method: string): SlackCall[];
  answerNext(method: string, ...answers: SlackAnswer[]): void;
  idToken: IdTokenSigner;
  close(): Promise<void>;
}> {
  const keys = await slackKeys();
  const calls: SlackCall[] = [];
  const queued = new Map<string, SlackAnswer[]>();
  const hanging = new Set<IncomingMessage>();
  let ts = 1_700_000_000;
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      if (req.url === '/openid/connect/keys') {
        calls.push({ method: 'openid/connect/keys', args: {}, token: null });
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(keys.jwks));
      }
      const method = (req.url ?? '').replace(/^\/api\//, '').replace(/\?.*$/, '');
      const form = new URLSearchParams(text);
      const args: Record<string, any> = {};
      for (const [key, value] of form) {
        try {
          args[key] = ['blocks', 'view'].includes(key) ? JSON.parse(value) : value;
        } catch {
          args[key] = value;
        }
      }
      const auth = req.headers.authorization;
      const call: SlackCall = {
        method,
        args,
        token: auth?.startsWith('Bearer ') ? auth.slice(7) : null,
      };
      calls.push(call);
      const answer = queued.get(method)?.shift();
      if (answer?.hang) {
        hanging.add(req);
        return;
      }
      const body = answer?.body ?? defaultAnswer(method, args, () => `${++ts}.000100`);
      call.answer = body;
      res.writeHead(answer?.status ?? 200, {
        'content-type': 'application/json',
        ...answer?.headers,
      });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/`,
    calls,
    callsTo: (method) => calls.filter((call) => call.method === method),
    answerNext(method, ...answers) {
      queued.set(method, [...(queued.get(method) ?? []), ...answers]);
    },
    idToken: keys.sign,
    async close() {
      for (const req of hanging) req.socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function defaultAnswer(method: string, args: Record<string, any>, nextTs: () => string): unknown {
  switch (method) {
    case 'auth.test':
      return {
        ok: true,
        url: 'https://acme.slack.com/',
        team: 'Acme',
        user: 'switchboard',
        team_id: TEAM,
        user_id: BOT_USER,
        bot_id: 'B0BOTBOT1',
      };
    case 'chat.postMessage':
      // A user id as the channel posts in the bot's direct message with them (a D… channel).
      return {
        ok: true,
        channel: String(args.channel).startsWith('U')
          ? `D${String(args.channel).slice(1)}`
          : args.channel,
        ts: nextTs(),
        message: { text: args.text },
      };
    case 'chat.update':
      return { ok: true, channel: args.channel, ts: args.ts, text: args.text };
    case 'chat.postEphemeral':
      return { ok: true, message_ts: nextTs() };
    case 'views.open':
      return { ok: true, view: { id: 'V0MODAL01', ...args.view } };
    case 'oauth.v2.access':
      return {
        ok: true,
        app_id: 'A0SWITCHBD',
        authed_user: { id: 'U0INSTALL' },
        scope: 'chat:write,im:history',
        token_type: 'bot',
        access_token: BOT_TOKEN,
        bot_user_id: BOT_USER,
        team: { id: TEAM, name: 'Acme' },
        enterprise: null,
        is_enterprise_install: false,
      };
    case 'openid.connect.token':
      return {
        ok: true,
        access_token: 'xoxp-1111-2222-3333-openidtoken',
        token_type: 'Bearer',
        id_token: 'eyJhbGciOiJSUzI1NiJ9.e30.c2ln',
      };
    case 'openid.connect.userInfo':
      return {
        ok: true,
        sub: 'U0SIGNEDIN',
        'https://slack.com/user_id': 'U0SIGNEDIN',
        'https://slack.com/team_id': TEAM,
        name: 'Signed In',
      };
    default:
      return { ok: false, error: 'unknown_method' };
  }
}

/** Slack's request signature (v0), computed as Slack does, over exactly the bytes sent. */
export function slackSignature(secret: string, timestamp: number, body: string | Buffer): string {
  const hmac = createHmac('sha256', secret);
  hmac.update(`v0:${timestamp}:`);
  hmac.update(body);
  return `v0=${hmac.digest('hex')}`;
}

/** POSTs a body to one of switchboard's Slack endpoints, signed (or not) as told. */
export async function postToSlackEndpoint(
  serverUrl: string,
  path: '/api/slack/interactions' | '/api/slack/events',
  body: string | Buffer,
  options: {
    secret?: string;
    timestamp?: number;
    contentType?: string;
    headers?: Record<string, string>;
    unsigned?: boolean;
  } = {},
): Promise<{ status: number; text: string; json: any }> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    'content-type':
      options.contentType ??
      (path === '/api/slack/events' ? 'application/json' : 'application/x-www-form-urlencoded'),
    ...(options.unsigned
      ? {}
      : {
          'x-slack-request-timestamp': String(timestamp),
          'x-slack-signature': slackSignature(options.secret ?? SIGNING_SECRET, timestamp, body),
        }),
    ...options.headers,
  };
  const response = await fetch(`${serverUrl}${path}`, { method: 'POST', headers, body });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json };
}

/** A button press as Slack sends it (block_actions), form-encoded in `payload`. */
export function pressPayload(options: {
  user: string;
  team?: string;
  /** approval_allow or approval_deny, or any other action id. */
  actionId: string;
  todoId: number | string;
  channel?: string;
}): string {
  const team = options.team ?? TEAM;
  const channel = options.channel ?? `D${options.user.slice(1)}`;
  const payload = {
    type: 'block_actions',
    user: {
      id: options.user,
      username: options.user.toLowerCase(),
      name: options.user.toLowerCase(),
      team_id: team,
    },
    api_app_id: 'A0SWITCHBD',
    token: 'deprecated-verification-token',
    container: {
      type: 'message',
      message_ts: '1700000001.000100',
      channel_id: channel,
      is_ephemeral: false,
    },
    trigger_id: '1234567890123.1234567890.abcdef0123456789abcdef0123456789',
    team: { id: team, domain: 'acme' },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: channel, name: 'directmessage' },
    message: { type: 'message', bot_id: 'B0BOTBOT1', ts: '1700000001.000100', text: 'Approval' },
    state: { values: {} },
    response_url: `https://hooks.slack.com/actions/${team}/1234567890/abcdefABCDEF`,
    actions: [
      {
        action_id: options.actionId,
        block_id: `approval:${options.todoId}`,
        text: { type: 'plain_text', text: 'Allow', emoji: false },
        value: String(options.todoId),
        style: 'primary',
        type: 'button',
        action_ts: '1700000002.000200',
      },
    ],
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

/** The Deny modal submitted (view_submission), with its note and the metadata switchboard gave it. */
export function denySubmission(options: {
  user: string;
  team?: string;
  privateMetadata: string;
  note: string | null;
}): string {
  const team = options.team ?? TEAM;
  const payload = {
    type: 'view_submission',
    team: { id: team, domain: 'acme' },
    user: { id: options.user, username: 'u', name: 'u', team_id: team },
    api_app_id: 'A0SWITCHBD',
    token: 'deprecated-verification-token',
    trigger_id: '1234567890123.1234567890.fedcba',
    view: {
      id: 'V0MODAL01',
      team_id: team,
      type: 'modal',
      private_metadata: options.privateMetadata,
      callback_id: 'approval_deny_note',
      state: { values: { note: { note: { type: 'plain_text_input', value: options.note } } } },
      hash: '1700000003.abcdef',
      app_id: 'A0SWITCHBD',
      bot_id: 'B0BOTBOT1',
    },
    response_urls: [],
    is_enterprise_install: false,
    enterprise: null,
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

/** A direct message to the bot (Events API `message.im`). */
export function directMessage(options: {
  user: string;
  text: string;
  eventId: string;
  team?: string;
}): string {
  const team = options.team ?? TEAM;
  return JSON.stringify({
    token: 'deprecated-verification-token',
    team_id: team,
    api_app_id: 'A0SWITCHBD',
    event: {
      type: 'message',
      channel: `D${options.user.slice(1)}`,
      user: options.user,
      text: options.text,
      ts: '1700000004.000400',
      event_ts: '1700000004.000400',
      channel_type: 'im',
    },
    type: 'event_callback',
    authorizations: [
      {
        enterprise_id: null,
        team_id: team,
        user_id: BOT_USER,
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    event_id: options.eventId,
    event_time: 1700000004,
  });
}
