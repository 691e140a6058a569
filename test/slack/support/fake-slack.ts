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

/** The person using the fake's pages (`npm run fake-slack`): a Slack user in its workspace. */
export const FAKE_SLACK_USER = 'U0YOU0001';

/**
 * A Slack Web API on a loopback port (SWITCHBOARD_SLACK_API_URL points at it): it answers every
 * method as Slack documents it, records each call, and answers as told (`answerNext`) — a 429
 * with Retry-After, a 5xx, Slack's `{ok: false, error}`, or no answer at all. Beside it, as on
 * slack.com, Sign in with Slack's key set (`/openid/connect/keys`); `idToken` signs as Slack.
 *
 * With `switchboardUrl`, it is also Slack's client for a person (`npm run fake-slack`): its page
 * at `/` shows what the bot posted, with its buttons, and a direct message box; a press, a Deny
 * note or a message is sent to that switchboard signed with SIGNING_SECRET, as Slack sends it.
 */
export async function startFakeSlack(
  options: { port?: number; switchboardUrl?: string } = {},
): Promise<{
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
      if (options.switchboardUrl && !req.url?.startsWith('/api/')) {
        const pages = clientPages(options.switchboardUrl, calls);
        pages(req.method ?? 'GET', req.url ?? '/', text).then(
          (answer) => res.writeHead(answer.status, answer.headers).end(answer.body),
          (error: unknown) =>
            res.writeHead(502).end(`switchboard did not take it: ${String(error)}`),
        );
        return;
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
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
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

interface PageAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Slack's client, as the fake plays it for FAKE_SLACK_USER: the bot's messages (as last updated)
 * with their buttons, the modal the bot opened, the answers for the presser's eyes only, and a
 * direct message box. What is pressed or sent goes to switchboard as Slack would send it.
 */
function clientPages(switchboardUrl: string, calls: SlackCall[]) {
  const dm = `D${FAKE_SLACK_USER.slice(1)}`;
  const back: PageAnswer = { status: 303, headers: { location: '/' }, body: '' };
  const sent = async (status: Promise<{ status: number; text: string }>) => {
    const answer = await status;
    if (answer.status >= 300) throw new Error(`HTTP ${answer.status} ${answer.text}`);
    return back;
  };
  return async (method: string, url: string, body: string): Promise<PageAnswer> => {
    const form = new URLSearchParams(body);
    if (method === 'POST' && url === '/dm') {
      const text = form.get('text') ?? '';
      return sent(
        postToSlackEndpoint(
          switchboardUrl,
          '/api/slack/events',
          directMessage({ user: FAKE_SLACK_USER, text, eventId: `Ev0${Date.now()}` }),
        ),
      );
    }
    if (method === 'POST' && url === '/press') {
      return sent(
        postToSlackEndpoint(
          switchboardUrl,
          '/api/slack/interactions',
          pressPayload({
            user: FAKE_SLACK_USER,
            actionId: form.get('action_id') ?? '',
            todoId: form.get('todo_id') ?? '',
            channel: form.get('channel') ?? dm,
          }),
        ),
      );
    }
    if (method === 'POST' && url === '/submit') {
      return sent(
        postToSlackEndpoint(
          switchboardUrl,
          '/api/slack/interactions',
          denySubmission({
            user: FAKE_SLACK_USER,
            privateMetadata: form.get('private_metadata') ?? '',
            note: form.get('note') || null,
          }),
        ),
      );
    }
    if (url !== '/') return { status: 404, headers: {}, body: 'The fake Slack has no page here.' };
    return {
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: clientPage(calls, dm),
    };
  };
}

function clientPage(calls: SlackCall[], dm: string): string {
  const messages = new Map<string, SlackCall['args']>();
  for (const call of calls) {
    if (call.method === 'chat.postMessage' && call.answer?.ok)
      messages.set(`${call.answer.channel}/${call.answer.ts}`, call.args);
    if (call.method === 'chat.update')
      messages.set(`${call.args.channel}/${call.args.ts}`, call.args);
  }
  const shown = [...messages.values()].reverse().map((args) => `<li>${message(args)}</li>`);
  const whispers = calls
    .filter((call) => call.method === 'chat.postEphemeral')
    .map((call) => `<li><em>Only visible to you:</em> ${escape(String(call.args.text ?? ''))}</li>`)
    .reverse();
  const modal = calls.findLast((call) => call.method === 'views.open')?.args.view as
    { private_metadata?: string; title?: { text?: string } } | undefined;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Fake Slack</title></head><body>
<h1>Fake Slack — you are ${FAKE_SLACK_USER} in ${TEAM}</h1>
<form method="post" action="/dm"><label>Message the bot <input name="text" placeholder="the code from switchboard slack link"></label>
<button type="submit">Send</button></form>
${
  modal
    ? `<h2>${escape(modal.title?.text ?? 'Deny')}</h2><form method="post" action="/submit">
<input type="hidden" name="private_metadata" value="${escape(modal.private_metadata ?? '')}">
<label>Note <input name="note"></label><button type="submit">Submit</button></form>`
    : ''
}
<h2>What the bot posted (newest first)</h2><ul>${[...whispers, ...shown].join('') || '<li>nothing yet</li>'}</ul>
<p>This page does not refresh itself: reload it.</p>
</body></html>`;

  function message(args: SlackCall['args']): string {
    const blocks = (Array.isArray(args.blocks) ? args.blocks : []) as {
      type: string;
      block_id?: string;
      text?: { text?: string };
      elements?: { action_id?: string; value?: string; text?: { text?: string } }[];
    }[];
    const parts = blocks.map((block) => {
      if (block.type !== 'actions') {
        // A section's text, or a context's elements (each a text object of its own).
        const text =
          block.text?.text ??
          block.elements?.map((element) => String((element as { text?: unknown }).text)).join(' ');
        return `<p>${escape(String(text ?? ''))}</p>`;
      }
      return (block.elements ?? [])
        .map(
          (button) => `<form method="post" action="/press" style="display:inline">
<input type="hidden" name="action_id" value="${escape(button.action_id ?? '')}">
<input type="hidden" name="todo_id" value="${escape(button.value ?? '')}">
<input type="hidden" name="channel" value="${escape(String(args.channel ?? dm))}">
<button type="submit">${escape(button.text?.text ?? '')}</button></form>`,
        )
        .join('');
    });
    return parts.length ? parts.join('') : `<p>${escape(String(args.text ?? ''))}</p>`;
  }
}

function escape(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!,
  );
}
