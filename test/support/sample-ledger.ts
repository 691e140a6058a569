import type postgres from 'postgres';
import {
  claimTodo,
  completeTodo,
  createTodo,
  decideApproval,
  issueToken,
  requestApproval,
} from '../../src/data/index.js';
import { saveGitHubApp } from '../../src/integrations/github-app/github-app-store.js';
import type { SecretBox } from '../../src/platform/secrets/secret-box.js';
import { addSource } from '../../src/data/sources/source-store.js';
import { defaultSourceRules } from '../../src/providers/by-kind/source-rules.js';
import type { Cast } from './principals.js';

export interface SampleLedger {
  /** Claimed by `bot` and completed: a history of three events. */
  done: number;
  /** Pending on `reviews`: a wake, were it new. */
  pending: number;
  /** Asked by `bot`, allowed by `bob`. */
  approval: number;
  /** An admin token of `ada`'s. */
  token: string;
  /** The secret of the source `forge`, sealed in the database. */
  sourceSecret: string;
}

/**
 * A database's worth of what a backup must carry: todos with their history, text that COPY
 * escapes, a verdict, a token, a source's sealed secret, and a GitHub App set up (sealed too).
 */
export async function fillSampleLedger(
  sql: postgres.Sql,
  cast: Cast,
  box: SecretBox,
): Promise<SampleLedger> {
  const { todo: done } = await createTodo(sql, cast.bob, {
    queue: 'reviews',
    title: 'Review PR #482',
    body: 'a body\nwith lines, a tab\tand a backslash \\',
    source: 'cli',
  });
  const claimed = await claimTodo(sql, cast.bot, done.id);
  await completeTodo(sql, cast.bot, done.id, claimed.lease_token, {
    summary: 'looks good',
    result: { approved: true, notes: ['é', '\\.'] },
  });
  const { todo: pending } = await createTodo(sql, cast.bob, {
    queue: 'reviews',
    title: 'Still waiting',
    source: 'cli',
  });
  const approval = await requestApproval(sql, cast.bot, {
    question: 'Bash: npm publish',
    about_todo_id: done.id,
    source: 'channel',
  });
  await decideApproval(sql, cast.bob, approval.id, 'allow', 'go ahead');
  const added = await addSource(sql, box, {
    name: 'forge',
    kind: 'gitea',
    owner: 'ada',
    defaultRules: defaultSourceRules('gitea'),
  });
  await saveGitHubApp(
    sql,
    box,
    {
      id: 123456,
      slug: 'switchboard-acme',
      name: 'switchboard-acme',
      html_url: 'https://github.com/apps/switchboard-acme',
      owner: { login: 'acme' },
      client_id: 'Iv1.0123456789abcdef',
      client_secret: 'client-secret',
      webhook_secret: 'webhook-secret',
      pem: '-----BEGIN RSA PRIVATE KEY-----\nMIIE…\n-----END RSA PRIVATE KEY-----\n',
    },
    'ada',
  );
  return {
    done: done.id,
    pending: pending.id,
    approval: approval.id,
    token: await issueToken(sql, cast.ada.principal!.id, 'human_add'),
    sourceSecret: added.secret!,
  };
}

/** Every table of `schema` but schema_migrations (its applied_at differ), as text, in row order. */
export async function tableContents(
  sql: postgres.Sql,
  schema: string,
): Promise<Record<string, string>> {
  const tables = await sql<{ table: string }[]>`
    select relname::text as table from pg_class
    where relnamespace = ${schema}::regnamespace and relkind = 'r' and relname <> 'schema_migrations'
    order by 1`;
  const found: Record<string, string> = {};
  for (const { table } of tables) {
    const [{ rows }] = await sql.unsafe<[{ rows: string }]>(
      `select coalesce(json_agg(x order by x::text), '[]')::text as rows from "${schema}"."${table}" x`,
    );
    found[table] = rows;
  }
  return found;
}
