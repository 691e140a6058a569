import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  actorFor,
  approveAuthorization,
  exchangeDeviceCode,
  findDeviceAuthorization,
  findPrincipal,
  issueGrantTokens,
  requestDeviceAuthorization,
  type Grant,
} from '../../src/data/index.js';
import { openEventStream } from '../support/event-stream.js';
import { initializeRequest } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { consoleSession } from '../oauth/support/oauth-client.js';

let server: TestServer;
/** A second process on the same database: deactivating in one ends access in both. */
let other: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  other = await startTestServer({ schema: server.schema });
});
afterAll(async () => {
  await other?.stop();
  await server?.stop();
});

const admin = () => server.adminToken;

async function addHuman(name: string, extra: { is_admin?: boolean } = {}): Promise<string> {
  const added = await server.api(admin(), 'POST', '/humans', { name, ...extra });
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  return added.body.token;
}

async function addAgent(owner: string, name: string): Promise<string> {
  const added = await server.api(owner, 'POST', '/agents', { name, queues: ['reviews'] });
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  return added.body.token;
}

/** The CLI's sign-in through the browser, as the device flow ends: a grant and its token. */
async function cliSignIn(name: string): Promise<{ token: string; grant: Grant }> {
  const human = (await findPrincipal(server.sql, name))!;
  const { deviceCode, userCode } = await requestDeviceAuthorization(server.sql, {
    clientId: 'switchboard-cli',
    resource: `${server.url}/api/v1`,
  });
  const { id } = (await findDeviceAuthorization(server.sql, userCode))!;
  await approveAuthorization(server.sql, actorFor(human, 'web'), id, undefined);
  const grant = (await exchangeDeviceCode(server.sql, {
    clientId: 'switchboard-cli',
    deviceCode,
  })) as Grant;
  return { token: (await issueGrantTokens(server.sql, grant)).access_token, grant };
}

async function whoami(process: TestServer, token: string): Promise<number> {
  return (await process.api(token, 'GET', '/whoami')).status;
}

/** Opens a streaming GET; `ended` resolves with all it sent once the server ends it. */
async function openStream(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  expect(response.status).toBe(200);
  let text = '';
  const ended = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) text += decoder.decode(chunk as Uint8Array);
    return text;
  })();
  ended.catch(() => {});
  return { ended, text: () => text, close: () => controller.abort() };
}

describe('deactivating a human', () => {
  test('ends their tokens, sign-ins and console sessions and their agents’, in every process, at once', async () => {
    const grace = await addHuman('grace');
    const agent = await addAgent(grace, 'grace-bot');
    const { token: signedIn } = await cliSignIn('grace');
    const console = await consoleSession(server, grace);
    const auth = (token: string) => ({ authorization: `Bearer ${token}` });

    // Open in the other process: the agent's event stream and MCP notification stream, and
    // grace's console page.
    const events = await openEventStream(other.url, agent);
    const initialize = await fetch(`${other.url}/mcp`, {
      method: 'POST',
      headers: {
        ...auth(agent),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(initializeRequest('off-boarding')),
    });
    expect(initialize.status).toBe(200);
    const mcp = await openStream(`${other.url}/mcp`, {
      ...auth(agent),
      'mcp-session-id': initialize.headers.get('mcp-session-id')!,
      accept: 'text/event-stream',
    });
    const live = await openStream(`${other.url}/live?page=%2F&rev=none`, {
      cookie: console.cookie,
    });
    await expect
      .poll(async () =>
        (
          await server.sql`select path from consumer_sessions where principal = 'grace-bot' order by path`
        ).map((row) => row.path),
      )
      .toEqual(['mcp_log', 'sse']);
    for (const token of [grace, agent, signedIn]) expect(await whoami(other, token)).toBe(200);

    const deactivated = await server.api(admin(), 'POST', '/humans/grace/deactivate');
    expect(deactivated.status, JSON.stringify(deactivated.body)).toBe(200);
    expect(deactivated.body).toMatchObject({
      human: { name: 'grace', kind: 'human', revoked_at: expect.any(String) },
      agents: ['grace-bot'],
      tokens_revoked: 3,
      sign_ins_revoked: 1,
      sessions_ended: 1,
      approvals: [],
    });
    expect(deactivated.body.human).not.toHaveProperty('id');

    // Every stream in the other process ends, with nothing after.
    await server.api(admin(), 'POST', '/todos', { queue: 'reviews', title: 'after grace left' });
    await events.ended;
    expect(events.wakes()).toEqual([]);
    for (const stream of [mcp, live]) expect(await stream.ended).not.toContain('after grace left');
    // No request of theirs is answered by either process.
    for (const process of [server, other])
      for (const token of [grace, agent, signedIn]) expect(await whoami(process, token)).toBe(401);
    expect((await console.request('/')).status).toBe(303);
  });

  test('sends their pending approvals to their backup, each history saying so; their todos stay theirs', async () => {
    const hal = await addHuman('hal');
    await addHuman('ivy');
    const bot = await addAgent(hal, 'hal-bot');
    const asked = await server.api(bot, 'POST', '/approvals', { question: 'May I deploy?' });
    const made = await server.api(bot, 'POST', '/todos', { queue: 'reviews', title: 'hal’s work' });
    expect((await server.api(hal, 'PATCH', '/humans/hal', { backup: 'ivy' })).body).toMatchObject({
      human: { name: 'hal', backup: 'ivy' },
    });

    const { body } = await server.api(admin(), 'POST', '/humans/hal/deactivate');
    expect(body.approvals).toMatchObject([{ id: asked.body.todo.id, assignee: 'ivy' }]);
    const { body: shown } = await server.api(admin(), 'GET', `/todos/${asked.body.todo.id}`);
    expect(shown.todo).toMatchObject({ assignee: 'ivy', attributed_to: 'hal', state: 'pending' });
    // (The delivery paths may note what they did after it.)
    expect(shown.history.find((e: { action: string }) => e.action === 'reassigned')).toMatchObject({
      action: 'reassigned',
      actor_kind: 'human',
      data: { from: 'hal', to: 'ivy' },
    });
    const { body: work } = await server.api(admin(), 'GET', `/todos/${made.body.todo.id}`);
    expect(work.todo).toMatchObject({ attributed_to: 'hal', state: 'pending' });
  });

  test('with no backup, their approvals go to the admins: every admin sees and decides them, no other human sees them', async () => {
    const jo = await addHuman('jo');
    const kit = await addHuman('kit');
    const lee = await addHuman('lee', { is_admin: true });
    const asked = await server.api(jo, 'POST', '/approvals', { question: 'Mine to ask' });
    const id = asked.body.todo.id as number;

    const { body } = await server.api(admin(), 'POST', '/humans/jo/deactivate');
    expect(body.approvals).toMatchObject([{ id, assignee: null }]);
    const { body: shown } = await server.api(lee, 'GET', `/todos/${id}`);
    // (The delivery paths may note what they did after it.)
    expect(shown.history.find((e: { action: string }) => e.action === 'reassigned')).toMatchObject({
      action: 'reassigned',
      data: { from: 'jo', to: null },
    });
    // In every admin's list of what waits for them; not in another human's at all.
    for (const token of [admin(), lee]) {
      const mine = await server.api(token, 'GET', '/todos?mine=true&queue=approvals');
      expect(mine.body.todos.map((todo: { id: number }) => todo.id)).toContain(id);
    }
    expect((await server.api(kit, 'GET', `/todos/${id}`)).status).toBe(404);
    expect((await server.api(kit, 'POST', `/todos/${id}/approve`)).status).toBe(404);
    const decided = await server.api(lee, 'POST', `/todos/${id}/deny`, { note: 'jo left' });
    expect(decided.body.todo).toMatchObject({ verdict: 'deny', decided_by: 'lee' });
  });

  test('refuses the last admin (409), and lets an admin go while another stays', async () => {
    const mo = await addHuman('mo', { is_admin: true });
    const { body: me } = await server.api(admin(), 'GET', '/whoami');
    const first = me.principal.name as string;
    // Every other admin made here goes first; then each of the two left may go, not both.
    for (const { name } of (await server.api(admin(), 'GET', '/humans')).body.humans.filter(
      (human: { name: string; is_admin: boolean; revoked_at: string | null }) =>
        human.is_admin && !human.revoked_at && human.name !== first && human.name !== 'mo',
    ))
      expect((await server.api(admin(), 'POST', `/humans/${name}/deactivate`)).status).toBe(200);

    const self = await server.api(mo, 'POST', '/humans/mo/deactivate');
    expect(self.status).toBe(200);
    const last = await server.api(admin(), 'POST', `/humans/${first}/deactivate`);
    expect(last).toMatchObject({
      status: 409,
      body: {
        code: 'conflict',
        error: `${first} is the last admin: make another human an admin first, then deactivate ${first}`,
      },
    });
    expect(await whoami(server, admin())).toBe(200);
    // Put back for the tests after.
    expect((await server.api(admin(), 'POST', '/humans/mo/reactivate')).status).toBe(200);
  });

  test('refuses who may not: a human who is not an admin, and an agent — 403 whatever the body', async () => {
    const ned = await addHuman('ned');
    const bot = await addAgent(ned, 'ned-bot');
    await addHuman('oz');
    for (const token of [ned, bot]) {
      for (const [method, path, body] of [
        ['POST', '/humans/oz/deactivate', undefined],
        ['POST', '/humans/oz/reactivate', undefined],
        ['PATCH', '/humans/oz', { backup: 'ned', nonsense: [1] }],
        ['PATCH', '/humans/oz', { backup: 42 }],
      ] as const) {
        const answer = await server.api(token, method, path, body);
        expect(answer.status, `${method} ${path}`).toBe(403);
        expect(answer.body.code).toBe('forbidden');
      }
    }
    expect(await whoami(server, ned)).toBe(200);
  });

  test('a deactivated human, or one already active, is said so (409); an agent is no human (404)', async () => {
    const pat = await addHuman('pat');
    await addAgent(pat, 'pat-bot');
    expect((await server.api(admin(), 'POST', '/humans/pat/reactivate')).status).toBe(409);
    expect((await server.api(admin(), 'POST', '/humans/pat/deactivate')).status).toBe(200);
    expect((await server.api(admin(), 'POST', '/humans/pat/deactivate')).body).toMatchObject({
      code: 'conflict',
      error: expect.stringMatching(/^pat is already deactivated \(since /),
    });
    expect((await server.api(admin(), 'POST', '/humans/pat-bot/deactivate')).status).toBe(404);
    expect((await server.api(admin(), 'POST', '/humans/nobody/deactivate')).status).toBe(404);
  });
});

describe('reactivating a human', () => {
  test('lets them in with a new token; what deactivation revoked stays revoked', async () => {
    const quin = await addHuman('quin');
    const bot = await addAgent(quin, 'quin-bot');
    await server.api(admin(), 'POST', '/humans/quin/deactivate');

    const { status, body } = await server.api(admin(), 'POST', '/humans/quin/reactivate');
    expect(status).toBe(200);
    expect(body).toMatchObject({ human: { name: 'quin', revoked_at: null } });
    expect(body.token).toMatch(/^sbk_/);
    expect(await whoami(other, body.token)).toBe(200);
    for (const token of [quin, bot]) expect(await whoami(other, token)).toBe(401);
    const { body: shown } = await server.api(body.token, 'GET', '/humans/quin');
    expect(shown.human.agents).toMatchObject([
      { name: 'quin-bot', revoked_at: expect.any(String) },
    ]);
    const listed = await server.api(admin(), 'GET', '/tokens?human=quin');
    expect(listed.body.tokens).toMatchObject([{ kind: 'human_reactivate', principal: 'quin' }]);
  });
});

describe('human set and show', () => {
  test('a human sets their own backup and clears it; an admin anyone’s; bad backups are refused', async () => {
    const ray = await addHuman('ray');
    await addHuman('sue');
    expect((await server.api(ray, 'PATCH', '/humans/ray', { backup: 'sue' })).status).toBe(200);
    const shown = await server.api(ray, 'GET', '/humans/ray');
    expect(shown.body.human).toMatchObject({ name: 'ray', backup: 'sue', backup_for: [] });
    expect((await server.api(admin(), 'GET', '/humans/sue')).body.human.backup_for).toEqual([
      'ray',
    ]);
    // Another human is not theirs to see.
    expect((await server.api(ray, 'GET', '/humans/sue')).status).toBe(404);

    for (const [backup, error] of [
      ['ray', 'ray cannot be their own backup'],
      ['nobody', 'no human named nobody'],
      ['grace-bot', 'no human named grace-bot'],
      ['grace', 'grace is deactivated: choose an active human'],
      ['Sue', expect.stringMatching(/^backup must be lowercase/)],
    ] as const) {
      const answer = await server.api(ray, 'PATCH', '/humans/ray', { backup });
      expect(answer, backup).toMatchObject({ status: 400, body: { code: 'invalid', error } });
    }
    expect((await server.api(ray, 'PATCH', '/humans/ray', { other: 1 })).status).toBe(400);

    expect(
      (await server.api(admin(), 'PATCH', '/humans/ray', { backup: null })).body.human,
    ).toMatchObject({
      backup: null,
    });
    // Nothing named: nothing changes.
    expect((await server.api(ray, 'PATCH', '/humans/ray', {})).body.human.backup).toBeNull();
  });
});

describe('tokens', () => {
  test('every token is listed with its kind, principal, creation and last use — never its secret or hash', async () => {
    const tess = await addHuman('tess');
    const bot = await addAgent(tess, 'tess-bot');
    const { token: signedIn, grant } = await cliSignIn('tess');
    for (const token of [bot, signedIn]) expect(await whoami(server, token)).toBe(200);

    const { status, body } = await server.api(tess, 'GET', '/tokens');
    expect(status).toBe(200);
    expect(body.tokens).toMatchObject([
      {
        kind: 'login',
        principal: 'tess',
        human: 'tess',
        client: 'switchboard CLI',
        grant_id: grant.id,
      },
      {
        kind: 'agent_add',
        principal: 'tess-bot',
        principal_kind: 'agent',
        human: 'tess',
        client: null,
      },
      { kind: 'human_add', principal: 'tess', principal_kind: 'human', revoked_at: null },
    ]);
    for (const token of body.tokens) {
      expect(Object.keys(token).sort()).toEqual(
        [
          'client',
          'created_at',
          'expires_at',
          'grant_id',
          'human',
          'id',
          'kind',
          'last_used_at',
          'principal',
          'principal_kind',
          'revoked_at',
        ].sort(),
      );
    }
    const text = JSON.stringify(body);
    for (const secret of [tess, bot, signedIn]) expect(text).not.toContain(secret.slice(4));
    // Each was used (tess's: this very request), and it says so.
    expect(body.tokens.every((token: { last_used_at: string | null }) => token.last_used_at)).toBe(
      true,
    );

    // An admin sees everyone's, or one human's with ?human=; tess only her own.
    const all = await server.api(admin(), 'GET', '/tokens');
    expect(all.body.tokens.map((token: { kind: string }) => token.kind)).toContain('up');
    const hers = await server.api(admin(), 'GET', '/tokens?human=tess');
    expect(hers.body.tokens).toEqual(body.tokens);
    expect((await server.api(tess, 'GET', '/tokens?human=ned')).status).toBe(403);
    expect((await server.api(bot, 'GET', '/tokens')).status).toBe(403);
    expect((await server.api(admin(), 'GET', '/tokens?human=nobody')).status).toBe(404);
  });

  test('a token is revoked by its human or an admin, at once in every process; a sign-in’s ends its grant', async () => {
    const uma = await addHuman('uma');
    const vic = await addHuman('vic');
    const bot = await addAgent(uma, 'uma-bot');
    const { token: signedIn, grant } = await cliSignIn('uma');
    const ids = Object.fromEntries(
      (await server.api(uma, 'GET', '/tokens')).body.tokens.map(
        (token: { kind: string; id: number }) => [token.kind, token.id],
      ),
    );
    for (const process of [server, other]) expect(await whoami(process, bot)).toBe(200);

    // Another human's token is as if it did not exist.
    const foreign = await server.api(vic, 'POST', `/tokens/${ids.agent_add}/revoke`);
    const missing = await server.api(vic, 'POST', '/tokens/987654321/revoke');
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe(missing.body.error.replace('987654321', String(ids.agent_add)));
    expect((await server.api(bot, 'POST', `/tokens/${ids.agent_add}/revoke`)).status).toBe(403);

    const revoked = await server.api(uma, 'POST', `/tokens/${ids.agent_add}/revoke`);
    expect(revoked.body.token).toMatchObject({ id: ids.agent_add, revoked_at: expect.any(String) });
    for (const process of [server, other]) expect(await whoami(process, bot)).toBe(401);
    expect((await server.api(uma, 'POST', `/tokens/${ids.agent_add}/revoke`)).status).toBe(409);

    expect((await server.api(admin(), 'POST', `/tokens/${ids.login}/revoke`)).status).toBe(200);
    expect(await whoami(other, signedIn)).toBe(401);
    const [ended] = await server.sql`select revoked_at from oauth_grants where id = ${grant.id}`;
    expect(ended!.revoked_at).not.toBeNull();
    // Only what still works is listed, unless all=true.
    expect((await server.api(uma, 'GET', '/tokens')).body.tokens).toMatchObject([
      { kind: 'human_add' },
    ]);
    expect((await server.api(uma, 'GET', '/tokens?all=true')).body.tokens).toHaveLength(3);
    expect(await whoami(server, uma)).toBe(200);
  });
});
