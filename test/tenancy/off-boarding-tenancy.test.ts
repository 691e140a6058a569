import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  asFor,
  buildTenancyWorld,
  MISSING_ID,
  type TenancyWorld,
} from './support/tenancy-world.js';

// Off-boarding keeps tenancy: an approval that went to the admins is no other human's to see,
// and a token is its human's (and the admins') to list and revoke — anyone else's answer is the
// one a missing id gets.
let server: TestServer;
let world: TenancyWorld;

beforeAll(async () => {
  server = await startTestServer();
  world = await buildTenancyWorld(server);
});
afterAll(async () => {
  await server?.stop();
});

/** Status and body as sent, as text. */
async function send(token: string, method: string, path: string): Promise<string> {
  const { status, body } = await server.api(token, method, path);
  return `${status} ${JSON.stringify(body)}`;
}

test('tokens: a human lists only their own and their agents’, and another’s token answers as a missing one', async () => {
  const { tokens } = world;
  const listed = (await server.api(tokens.alice, 'GET', '/tokens?all=true')).body.tokens as {
    id: number;
    human: string;
    principal: string;
  }[];
  expect(new Set(listed.map((token) => token.human))).toEqual(new Set(['alice']));
  expect(new Set(listed.map((token) => token.principal))).toEqual(new Set(['alice', 'abot']));

  const all = (await server.api(tokens.admin, 'GET', '/tokens')).body.tokens as {
    id: number;
    human: string;
  }[];
  const bobs = all.filter((token) => token.human === 'bob').map((token) => token.id);
  expect(bobs).toHaveLength(2);
  const missing = await send(tokens.alice, 'POST', `/tokens/${MISSING_ID}/revoke`);
  expect(missing).toMatch(/^404 /);
  for (const id of bobs)
    expect(await send(tokens.alice, 'POST', `/tokens/${id}/revoke`)).toBe(asFor(missing, id));
  for (const agent of [tokens.abot, tokens.bbot]) {
    expect(await send(agent, 'GET', '/tokens')).toMatch(/^403 /);
    expect(await send(agent, 'POST', `/tokens/${bobs[0]}/revoke`)).toMatch(/^403 /);
  }
  // Nothing was revoked.
  expect(await send(tokens.bbot, 'GET', '/whoami')).toMatch(/^200 /);
  // Another human is as missing as one who does not exist.
  expect(await send(tokens.alice, 'GET', '/humans/bob')).toBe(
    (await send(tokens.alice, 'GET', '/humans/nobody')).replaceAll('nobody', 'bob'),
  );
});

test('approvals that went to the admins when bob left: every admin’s to see and decide, no other human’s or agent’s', async () => {
  const { tokens, ids } = world;
  const deactivated = await server.api(tokens.admin, 'POST', '/humans/bob/deactivate');
  expect(deactivated.status).toBe(200);
  const moved = [ids['bob-approval'], ids['bbot-approval']];
  expect(
    deactivated.body.approvals.map((todo: { id: number; assignee: string | null }) => [
      todo.id,
      todo.assignee,
    ]),
  ).toEqual(moved.sort((a, b) => a - b).map((id) => [id, null]));

  const missing = await send(tokens.alice, 'GET', `/todos/${MISSING_ID}`);
  for (const id of moved) {
    expect(await send(tokens.alice, 'GET', `/todos/${id}`)).toBe(asFor(missing, id));
    expect(await send(tokens.abot, 'GET', `/todos/${id}`)).toBe(
      asFor(await send(tokens.abot, 'GET', `/todos/${MISSING_ID}`), id),
    );
    expect(await send(tokens.alice, 'POST', `/todos/${id}/approve`)).toBe(
      asFor(await send(tokens.alice, 'POST', `/todos/${MISSING_ID}/approve`), id),
    );
    expect(await send(tokens.abot, 'POST', `/todos/${id}/approve`)).toMatch(/^403 /);
    expect(await send(tokens.admin, 'GET', `/todos/${id}`)).toMatch(/^200 /);
  }
  const alices = (await server.api(tokens.alice, 'GET', '/todos?state=all&limit=500')).body
    .todos as { id: number }[];
  expect(alices.map((todo) => todo.id)).not.toContain(moved[0]);
  // Only a human decides, and the first verdict wins.
  expect(await send(tokens.admin, 'POST', `/todos/${moved[0]}/approve`)).toMatch(/^200 /);
  expect(await send(tokens.admin, 'POST', `/todos/${moved[0]}/deny`)).toMatch(/^409 /);
});
