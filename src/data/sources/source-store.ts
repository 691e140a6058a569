import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import { conflict, invalid, notFound } from '../index.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import type { SourceKind } from '../../contract/source-kinds.js';

/**
 * A source's rules as saved: its provider's shape (`trust:` and `rules:`), which its provider
 * validates when they are saved and read (src/providers/source-rules.ts).
 */
export type SourceRules = unknown;

/** A source as the API shows it: never a secret or a token, only whether there is one. */
export interface SourceView {
  name: string;
  kind: SourceKind;
  owner: string;
  queues: string[];
  api_url: string | null;
  has_api_token: boolean;
  /** After a rotation: until when the previous secret is still accepted. */
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A source as the intake and the outbox use it: its rules, and its secrets opened. */
export interface OpenedSource extends SourceView {
  /** The current secret, then the previous one while its grace period lasts. */
  secrets: string[];
  apiToken: string | null;
  rules: SourceRules;
}

interface SourceRow extends SourceView {
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_live: boolean;
  api_token: Buffer | null;
  rules: Record<string, unknown>;
}

const VIEW = (db: Db) => db`
  name, kind::text as kind, owner, queues, api_url, api_token is not null as has_api_token,
  previous_secret_expires_at, created_at, updated_at`;

const view = (row: SourceRow): SourceView => ({
  name: row.name,
  kind: row.kind,
  owner: row.owner,
  queues: row.queues,
  api_url: row.api_url,
  has_api_token: row.has_api_token,
  previous_secret_expires_at: row.previous_secret_expires_at,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/**
 * A secret switchboard makes for a provider: a Standard Webhooks `whsec_` key (base64 of 32
 * random bytes, as the spec has it), else 32 random bytes in hex for the provider's secret field.
 * Linear makes its own signing secret and shows it in its settings: that one is given.
 */
export function mintSecret(kind: SourceKind): string {
  if (kind === 'linear') {
    throw invalid(
      "Linear makes the signing secret: copy it from the webhook's page and pass --secret",
    );
  }
  const bytes = randomBytes(32);
  return kind === 'standard-webhooks' ? `whsec_${bytes.toString('base64')}` : bytes.toString('hex');
}

function assertSecret(kind: SourceKind, secret: string): void {
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (secret.length < 16 || secret.length > 512 || /[\x00-\x1f\x7f]/.test(secret)) {
    throw invalid('a secret must be 16 to 512 printable characters');
  }
  if (kind === 'standard-webhooks' && !/^whsec_[A-Za-z0-9+/]+=*$/.test(secret)) {
    throw invalid('a Standard Webhooks secret is whsec_ followed by base64');
  }
}

export const DEFAULT_QUEUES: Record<SourceKind, string[]> = {
  gitea: ['issues', 'reviews'],
  forgejo: ['issues', 'reviews'],
  gitlab: ['issues', 'reviews', 'ci'],
  linear: ['issues'],
  'standard-webhooks': ['events'],
};

export interface NewSource {
  name: string;
  kind: SourceKind;
  owner: string;
  queues?: string[] | undefined;
  secret?: string | undefined;
  apiUrl?: string | undefined;
  apiToken?: string | undefined;
  /** Its provider's rules for a new source on these queues. */
  defaultRules: (queues: string[]) => SourceRules;
}

export async function addSource(
  db: Db,
  box: SecretBox,
  input: NewSource,
): Promise<{ source: SourceView; secret: string | null }> {
  const queues = [...new Set(input.queues?.length ? input.queues : DEFAULT_QUEUES[input.kind])];
  const minted = input.secret === undefined ? mintSecret(input.kind) : null;
  const secret = input.secret ?? minted!;
  assertSecret(input.kind, secret);
  if ((input.apiToken === undefined) !== (input.apiUrl === undefined) && input.kind !== 'linear') {
    throw invalid('an API token goes with the API URL it is for: give both, or neither');
  }
  const apiUrl =
    input.apiUrl ?? (input.apiToken && input.kind === 'linear' ? 'https://api.linear.app' : null);
  if (apiUrl !== null && !/^https?:\/\/[^\s/]+/.test(apiUrl)) {
    throw invalid('the API URL must be an http(s) URL, such as https://gitea.example.com');
  }
  try {
    const [row] = await db<SourceRow[]>`
      insert into sources (name, kind, owner, queues, secret, api_url, api_token, rules)
      values (${input.name}, ${input.kind}, ${input.owner}, ${queues}::text[],
              ${box.seal(secret)}, ${apiUrl?.replace(/\/+$/, '') ?? null},
              ${input.apiToken ? box.seal(input.apiToken) : null},
              ${db.json(input.defaultRules(queues) as never)})
      returning ${VIEW(db)}`;
    return { source: view(row!), secret: minted };
  } catch (error) {
    if (error instanceof postgres.PostgresError && error.code === '23505') {
      throw conflict(`a source named ${input.name} exists already`);
    }
    if (error instanceof postgres.PostgresError && error.code === '23514') {
      throw invalid(`refused by rule ${error.constraint_name}`);
    }
    throw error;
  }
}

export async function listSources(db: Db): Promise<SourceView[]> {
  const rows = await db<SourceRow[]>`select ${VIEW(db)} from sources order by name`;
  return rows.map(view);
}

/** The source with its rules; null when there is none by that name. */
export async function getSource(
  db: Db,
  name: string,
): Promise<{ source: SourceView; rules: SourceRules } | null> {
  const [row] = await db<SourceRow[]>`select ${VIEW(db)}, rules from sources where name = ${name}`;
  return row ? { source: view(row), rules: row.rules } : null;
}

/** For the intake and the outbox: the secrets still accepted, opened; null for no such source. */
export async function openSource(
  db: Db,
  box: SecretBox,
  name: string,
): Promise<OpenedSource | null> {
  const [row] = await db<SourceRow[]>`
    select ${VIEW(db)}, secret, previous_secret, rules, api_token,
           coalesce(previous_secret_expires_at > now(), false) as previous_secret_live
    from sources where name = ${name}`;
  if (!row) return null;
  const secrets = [box.open(row.secret)];
  if (row.previous_secret && row.previous_secret_live) secrets.push(box.open(row.previous_secret));
  return {
    ...view(row),
    secrets,
    apiToken: row.api_token ? box.open(row.api_token) : null,
    rules: row.rules,
  };
}

/**
 * A new secret; the one it replaces is still accepted for `graceSeconds`, so the provider can be
 * given the new one with no delivery refused in between. A rotation during a grace period ends
 * that one: only the current secret and the new one are ever accepted.
 */
export async function rotateSource(
  db: Db,
  box: SecretBox,
  name: string,
  options: { secret?: string | undefined; graceSeconds: number },
): Promise<{ source: SourceView; secret: string | null }> {
  const [current] = await db<{ kind: SourceKind }[]>`
    select kind::text as kind from sources where name = ${name}`;
  if (!current) throw notFound(`no source named ${name}`);
  const minted = options.secret === undefined ? mintSecret(current.kind) : null;
  const secret = options.secret ?? minted!;
  assertSecret(current.kind, secret);
  const [row] = await db<SourceRow[]>`
    update sources set previous_secret = secret, secret = ${box.seal(secret)},
      previous_secret_expires_at = now() + make_interval(secs => ${options.graceSeconds}),
      updated_at = now()
    where name = ${name}
    returning ${VIEW(db)}`;
  if (!row) throw notFound(`no source named ${name}`);
  return { source: view(row), secret: minted };
}

/** Removes the source; its deliveries stay on record under its name. */
export async function removeSource(db: Db, name: string): Promise<void> {
  const [row] = await db`delete from sources where name = ${name} returning id`;
  if (!row) throw notFound(`no source named ${name}`);
}

export async function saveSourceRules(db: Db, name: string, rules: SourceRules): Promise<void> {
  await db`update sources set rules = ${db.json(rules as never)}, updated_at = now() where name = ${name}`;
}
