import { load as loadYaml } from 'js-yaml';
import { z } from 'zod';
import type { SourceKind } from './source-kinds.js';

const Queue = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be a queue name (lowercase letters, digits, . _ -)');
/** A provider's login: Gitea and GitLab usernames, a Linear user's email. */
const Login = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._@+-]{0,254}$/, 'must be a login (or, for Linear, an email)');
const Mention = z
  .string()
  .regex(/^@[A-Za-z0-9][A-Za-z0-9._-]{0,38}$/, 'must be an @name')
  .nullable();
const Command = z
  .string()
  .regex(/^\/[a-z0-9][a-z0-9-]{0,38}$/, 'must be a /command')
  .nullable();
/** RFC 6901: `/data/title`, `/user/login`, `/items/0/name`. */
const Pointer = z
  .string()
  .regex(/^(\/[^/]*)+$/, 'must be a JSON pointer such as /data/title')
  .max(200)
  .nullable();

const rule = {
  enabled: z.boolean(),
  queue: Queue,
  /** A switchboard principal; one that does not exist is dropped (and noted), never fatal. */
  assignee: z.string().max(64).nullable(),
};

/**
 * Trust is an allowlist: only GitHub says how an author is related to a repository. A human on
 * `logins` makes pending todos, anyone else quarantined ones; a bot makes nothing unless it is
 * on `bots`.
 */
const Trust = z.strictObject({ logins: z.array(Login), bots: z.array(Login) });

const GiteaRules = z.strictObject({
  trust: Trust,
  rules: z.strictObject({
    issue_labeled: z.strictObject({ ...rule, label: z.string().min(1).max(50) }),
    issue_assigned: z.strictObject({ ...rule, logins: z.array(Login) }),
    comment: z.strictObject({ ...rule, mention: Mention, command: Command }),
    pull_request_opened: z.strictObject(rule),
    review_requested: z.strictObject({ ...rule, reviewers: z.array(Login) }),
  }),
});

const GitLabRules = z.strictObject({
  trust: Trust,
  rules: z.strictObject({
    comment: z.strictObject({ ...rule, mention: Mention, command: Command }),
    merge_request_opened: z.strictObject(rule),
    reviewer_added: z.strictObject({ ...rule, reviewers: z.array(Login) }),
    pipeline_failed: z.strictObject(rule),
    issue_labeled: z.strictObject({ ...rule, label: z.string().min(1).max(255) }),
  }),
});

const LinearRules = z.strictObject({
  trust: Trust,
  rules: z.strictObject({
    /** Only issues assigned to these (Linear users' emails or names); none by default. */
    issue_assigned: z.strictObject({ ...rule, assignees: z.array(z.string().min(1).max(255)) }),
    issue_labeled: z.strictObject({ ...rule, label: z.string().min(1).max(255) }),
    comment: z.strictObject({ ...rule, mention: Mention }),
  }),
});

const StandardWebhooksRules = z.strictObject({
  trust: Trust,
  rules: z.strictObject({
    event: z.strictObject({
      ...rule,
      /** The event types (the payload's `type`) that make todos; empty: every one. */
      types: z.array(z.string().min(1).max(100)),
      /** Where the todo's title is; null (or nothing there): the event type. */
      title: Pointer,
      body: Pointer,
      url: Pointer,
      /** Who caused it; null: the source's owner, the human who added it. */
      actor: Pointer,
    }),
  }),
});

const SCHEMAS = {
  gitea: GiteaRules,
  forgejo: GiteaRules,
  gitlab: GitLabRules,
  linear: LinearRules,
  'standard-webhooks': StandardWebhooksRules,
} as const;

export type GiteaRules = z.infer<typeof GiteaRules>;
export type GitLabRules = z.infer<typeof GitLabRules>;
export type LinearRules = z.infer<typeof LinearRules>;
export type StandardWebhooksRules = z.infer<typeof StandardWebhooksRules>;
export type SourceRules = GiteaRules | GitLabRules | LinearRules | StandardWebhooksRules;

/** The queue each default rule takes when the source was given it (else the source's first). */
const NATURAL_QUEUE: Record<string, string> = {
  issue_labeled: 'issues',
  issue_assigned: 'issues',
  comment: 'issues',
  pull_request_opened: 'reviews',
  merge_request_opened: 'reviews',
  review_requested: 'reviews',
  reviewer_added: 'reviews',
  pipeline_failed: 'ci',
};

/** Every rule of a kind on, each on its natural queue where the source has it, else the first. */
export function defaultRules(kind: SourceKind, queues: string[]): SourceRules {
  const rules = kindDefaults(kind, queues[0]!);
  for (const [name, one] of Object.entries(rules.rules) as [string, { queue: string }][]) {
    const natural = NATURAL_QUEUE[name];
    if (natural && queues.includes(natural)) one.queue = natural;
  }
  return rules;
}

function kindDefaults(kind: SourceKind, queue: string): SourceRules {
  const on = () => ({ enabled: true, queue, assignee: null });
  const trust = { logins: [], bots: [] };
  switch (kind) {
    case 'gitea':
    case 'forgejo':
      return {
        trust,
        rules: {
          issue_labeled: { ...on(), label: 'switchboard' },
          issue_assigned: { ...on(), logins: [] },
          comment: { ...on(), mention: '@switchboard', command: '/switchboard' },
          pull_request_opened: on(),
          review_requested: { ...on(), reviewers: [] },
        },
      };
    case 'gitlab':
      return {
        trust,
        rules: {
          comment: { ...on(), mention: '@switchboard', command: '/switchboard' },
          merge_request_opened: on(),
          reviewer_added: { ...on(), reviewers: [] },
          pipeline_failed: on(),
          issue_labeled: { ...on(), label: 'switchboard' },
        },
      };
    case 'linear':
      return {
        trust,
        rules: {
          issue_assigned: { ...on(), assignees: [] },
          issue_labeled: { ...on(), label: 'switchboard' },
          comment: { ...on(), mention: '@switchboard' },
        },
      };
    case 'standard-webhooks':
      return {
        trust,
        rules: {
          event: { ...on(), types: [], title: null, body: null, url: null, actor: null },
        },
      };
  }
}

export class RulesError extends Error {}

/**
 * A rules file (YAML, the shape of `.github/switchboard.yml`) merged over the kind's defaults:
 * it names only what it changes, a list replaces the default list. Strict: a misspelt key, a
 * rule another kind has, or a queue the source was not given is an error naming where.
 */
export function parseRules(kind: SourceKind, queues: string[], text: string): SourceRules {
  let file: unknown;
  try {
    file = loadYaml(text, { json: true }) ?? {};
  } catch (error) {
    const reason = (error as { reason?: unknown }).reason;
    throw new RulesError(`the file is not YAML${typeof reason === 'string' ? `: ${reason}` : ''}`);
  }
  if (typeof file !== 'object' || Array.isArray(file)) {
    throw new RulesError('the file must be a mapping with trust: and rules:');
  }
  return validateRules(kind, queues, merge(defaultRules(kind, queues), file));
}

/** Rules already merged (as stored), checked against the kind's schema and the source's queues. */
export function validateRules(kind: SourceKind, queues: string[], value: unknown): SourceRules {
  const parsed = SCHEMAS[kind].safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
    throw new RulesError(`${where}${issue.message}`);
  }
  for (const [name, one] of Object.entries(parsed.data.rules) as [string, { queue: string }][]) {
    if (!queues.includes(one.queue)) {
      throw new RulesError(
        `rules.${name}.queue: ${one.queue} is not one of this source's queues (${queues.join(', ')})`,
      );
    }
  }
  return parsed.data;
}

function merge(base: unknown, over: unknown): unknown {
  if (!isRecord(base) || !isRecord(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    // Not a key any rule has, and one that would reach the merged object's prototype.
    if (key === '__proto__') throw new RulesError('__proto__ is not a key of a rules file');
    out[key] = merge(base[key], value);
  }
  return out;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
