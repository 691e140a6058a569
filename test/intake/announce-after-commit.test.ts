import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { wakeChannel, type Wake } from '../../src/data/index.js';
import { deliver } from '../github/deliver.js';
import { isolateFromGitHub } from '../github/github-app.js';
import {
  addSource,
  freshLinearBody,
  giteaHeaders,
  gitlabHeaders,
  linearHeaders,
  postToSource,
  readSourceFixture,
  setRules,
  standardHeaders,
} from '../providers/support/sources.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// Every provider's new todo announces its wake after its delivery committed (the wake notifier,
// src/wakes/wake-notifier.ts), never by NOTIFY inside the commit: notifying commits are
// serialised database-wide (migrations/0012). Both send the same JSON (src/contract/wake.ts), so
// they are told apart in the database: a probe trigger records, for every todo inserted, whether
// its transaction left the wake to its writer (the trigger then stays quiet) and the
// transaction's id, which the announced wake must carry.

const LINEAR_SECRET = 'lin_wh_announce_after_commit_0123456789';
let server: TestServer;
const secrets: Record<string, string> = {};
const heard: Wake[] = [];
let stopListening: () => Promise<void>;

beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer();
  for (const [kind, name] of [
    ['gitea', 'code'],
    ['gitlab', 'lab'],
    ['linear', 'tracker'],
    ['standard-webhooks', 'crm'],
  ] as const) {
    const added = await addSource(server, {
      kind,
      name,
      ...(kind === 'linear' ? { secret: LINEAR_SECRET } : {}),
    });
    secrets[name] = added.secret;
    await setRules(
      server,
      name,
      'trust:\n  logins: [unknwon, gogits, root, sytses, ada@example.com]\n',
    );
  }
  await server.sql.unsafe(`
    create table announce_probe (todo_id bigint, announced text, wake_id text);
    create function announce_probe() returns trigger language plpgsql as $$
    begin
      insert into announce_probe
      values (new.id, current_setting('switchboard.announce_new_todos', true),
              pg_current_xact_id()::text);
      return null;
    end $$;
    create trigger announce_probe after insert on todos
      for each row execute function announce_probe();`);
  const listening = await server.sql.listen(wakeChannel(server.schema), (payload) =>
    heard.push(JSON.parse(payload) as Wake),
  );
  stopListening = () => listening.unlisten();
});
afterAll(async () => {
  await stopListening?.();
  await server?.stop();
});

/** Posts one delivery that makes a pending todo; resolves with the todo's id. */
const MAKERS: Record<string, () => Promise<number>> = {
  github: async () => {
    const sent = await deliver(server.url, 'issues.labeled.switchboard');
    expect(sent.status, sent.body).toBe(200);
    return JSON.parse(sent.body).delivery.todo_id;
  },
  gitea: async () => {
    const body = await readSourceFixture('gitea', 'pull_request.opened');
    const id = randomUUID();
    const sent = await postToSource(
      server,
      'code',
      body,
      giteaHeaders('gitea', 'pull_request', body, secrets.code!, id),
      id,
    );
    return sent.body.delivery.todo_id;
  },
  gitlab: async () => {
    const payload = JSON.parse(await readSourceFixture('gitlab', 'merge_request.open'));
    const id = randomUUID();
    const sent = await postToSource(
      server,
      'lab',
      JSON.stringify(payload),
      gitlabHeaders('merge_request', secrets.lab!, id),
      id,
    );
    return sent.body.delivery.todo_id;
  },
  linear: async () => {
    const body = freshLinearBody(await readSourceFixture('linear', 'Issue.create.labeled'));
    const id = randomUUID();
    const sent = await postToSource(
      server,
      'tracker',
      body,
      linearHeaders(body, LINEAR_SECRET, 'Issue', id),
      id,
    );
    return sent.body.delivery.todo_id;
  },
  'standard-webhooks': async () => {
    const body = await readSourceFixture('standard-webhooks', 'contact.created');
    const headers = await standardHeaders(body, secrets.crm!);
    const sent = await postToSource(server, 'crm', body, headers, headers['webhook-id']);
    return sent.body.delivery.todo_id;
  },
};

test.each(Object.keys(MAKERS))(
  "regression: source todos NOTIFYed inside their commit; every provider's new todo announces its wake after it (%s)",
  async (provider) => {
    const todoId = await MAKERS[provider]!();
    expect(todoId).toEqual(expect.any(Number));
    await expect.poll(() => heard.filter((wake) => wake.todo_id === todoId)).toHaveLength(1);
    const [wake] = heard.filter((wake) => wake.todo_id === todoId);
    expect(wake).toMatchObject({ event: 'claimable', todo_id: todoId });
    // Its delivery's transaction left the wake to its writer, so the trigger stayed quiet: the
    // one wake heard is the notifier's, named by that transaction.
    const [probe] = await server.sql<{ announced: string | null; wake_id: string }[]>`
      select announced, wake_id from announce_probe where todo_id = ${todoId}`;
    expect(probe).toEqual({ announced: 'on', wake_id: wake!.wake_id });
    // And nothing more comes: a marker sent now arrives after any wake sent before it.
    await server.sql`select pg_notify(${wakeChannel(server.schema)}, ${JSON.stringify({ todo_id: -todoId })})`;
    await expect.poll(() => heard.some((wake) => wake.todo_id === -todoId)).toBe(true);
    expect(heard.filter((wake) => wake.todo_id === todoId)).toHaveLength(1);
  },
);
