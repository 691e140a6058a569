import { load as loadYaml } from 'js-yaml';
import { z } from 'zod';

/**
 * The pieces every provider's rules are made of — GitHub's `.github/switchboard.yml` and each
 * source's rules alike: a queue, a rule's common keys, a comment rule's mention and command;
 * and the steps every rules file takes: merged over the defaults, checked strictly.
 */

export const Queue = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be a queue name (lowercase letters, digits, . _ -)');

/** A provider's login: Gitea and GitLab usernames, a Linear user's email. */
export const Login = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._@+-]{0,254}$/, 'must be a login (or, for Linear, an email)');

/** A comment mentioning this (as a whole word) is for switchboard; null: mentions do nothing. */
export const Mention = z
  .string()
  .regex(/^@[A-Za-z0-9][A-Za-z0-9._-]{0,38}$/, 'must be an @name')
  .nullable();

/** A comment whose first word is this is for switchboard; null: commands do nothing. */
export const Command = z
  .string()
  .regex(/^\/[a-z0-9][a-z0-9-]{0,38}$/, 'must be a /command')
  .nullable();

/** What every rule has: whether it is on, the queue it fills, and an optional assignee. */
export const rule = {
  enabled: z.boolean(),
  queue: Queue,
  /** A switchboard principal; one that does not exist is dropped (and noted), never fatal. */
  assignee: z.string().max(64).nullable(),
};

/** A rule that is on, on `queue`, for no one in particular: every default rule's start. */
export const ruleOn = (queue: string) => ({ enabled: true, queue, assignee: null });

/**
 * Trust as an allowlist (every provider but GitHub, which says how an author relates to a
 * repository): a human on `logins` makes pending todos, anyone else quarantined ones; a bot
 * makes nothing unless it is on `bots`.
 */
export const AllowlistTrust = z.strictObject({ logins: z.array(Login), bots: z.array(Login) });

/** A provider's rules: their strict schema, and every rule on with its defaults. */
export interface RuleSet<Rules> {
  schema: z.ZodType<Rules>;
  /** The defaults, every rule on the queue given. */
  defaults(queue: string): Rules;
}

/**
 * A source kind's rules: `trust` an allowlist (nobody, by default: a new source trusts no one)
 * and `rules`, each rule's own keys beside the common ones, every one on by default.
 */
export function allowlistRules<Shape extends z.core.$ZodLooseShape>(
  shape: Shape,
  defaults: (queue: string) => z.infer<z.ZodObject<Shape>>,
): RuleSet<{
  trust: z.infer<typeof AllowlistTrust>;
  rules: z.infer<z.ZodObject<Shape>>;
}> {
  return {
    schema: z.strictObject({ trust: AllowlistTrust, rules: z.strictObject(shape) }),
    defaults: (queue) => ({ trust: { logins: [], bots: [] }, rules: defaults(queue) }),
  };
}

export class RulesError extends Error {}

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

/** Every rule on, each on its natural queue where the source has it, else the first. */
export function defaultRules<Rules>(rules: RuleSet<Rules>, queues: string[]): Rules {
  const defaults = rules.defaults(queues[0]!);
  const named = (defaults as { rules?: Record<string, { queue: string }> }).rules ?? {};
  for (const [name, one] of Object.entries(named)) {
    const natural = NATURAL_QUEUE[name];
    if (natural && queues.includes(natural)) one.queue = natural;
  }
  return defaults;
}

/** The first thing wrong with a rules file, said as where and what. */
export function describeRulesIssue(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
  return `${where}${issue.message}`;
}

/**
 * A rules file (YAML, the shape of `.github/switchboard.yml`) merged over the defaults: it names
 * only what it changes, a list replaces the default list. Strict: a misspelt key, a rule another
 * kind has, or a queue the source was not given is an error naming where.
 */
export function parseRules<Rules>(rules: RuleSet<Rules>, queues: string[], text: string): Rules {
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
  return validateRules(rules, queues, mergeRules(defaultRules(rules, queues), file));
}

/** Rules already merged (as stored), checked against the schema and the source's queues. */
export function validateRules<Rules>(
  rules: RuleSet<Rules>,
  queues: string[],
  value: unknown,
): Rules {
  const parsed = rules.schema.safeParse(value);
  if (!parsed.success) throw new RulesError(describeRulesIssue(parsed.error));
  const named = (parsed.data as { rules?: Record<string, { queue: string }> }).rules ?? {};
  for (const [name, one] of Object.entries(named)) {
    if (!queues.includes(one.queue)) {
      throw new RulesError(
        `rules.${name}.queue: ${one.queue} is not one of this source's queues (${queues.join(', ')})`,
      );
    }
  }
  return parsed.data;
}

/** `over` merged into `base`: objects key by key, anything else (lists too) replaced. */
export function mergeRules(base: unknown, over: unknown): unknown {
  if (!isRecord(base) || !isRecord(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    // Not a key any rule has, and one that would reach the merged object's prototype.
    if (key === '__proto__') throw new RulesError('__proto__ is not a key of a rules file');
    out[key] = mergeRules(base[key], value);
  }
  return out;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
