import type { WebhookEventMap } from '@octokit/webhooks-types';
import { z } from 'zod';
import { addressesSwitchboard } from '../addresses-switchboard.js';
import type { Draft, Origin, Route } from '../provider.js';
import { includesLogin } from '../same-login.js';
import type { GitHubFacts } from './read-delivery-facts.js';
import type { RepositoryConfig } from './repository-config.js';

export type RuleName = keyof RepositoryConfig['rules'];

/**
 * How a payload field a rule reads is kept in the delivery's facts: `line` and `text` are
 * neutralised like a todo's title and body (so the todo made from them is the same as from the
 * raw text: neutralising twice changes nothing), `value` is kept as sent if it is a number,
 * boolean or short string, `present` says only whether the field is there.
 */
export type FieldSpec =
  'line' | 'text' | 'value' | 'present' | { [key: string]: FieldSpec } | [FieldSpec];

/** What a rule makes of a delivery it matched, before the rule's queue and assignee. */
interface Made {
  title: string;
  body: string | null;
  url: string | null;
  origin: Origin;
  issueNumber: number | null;
  commentId: number | null;
  react: 'issue' | 'comment' | null;
}

interface Context {
  facts: GitHubFacts;
  repository: NonNullable<GitHubFacts['repository']>;
  /** `in owner/name`, as every title says it. */
  where: string;
}

/** Every `event.action` GitHub documents (@octokit/webhooks-types). */
type EventAction = {
  [Event in keyof WebhookEventMap]: WebhookEventMap[Event] extends { action: infer Action }
    ? Action extends string
      ? `${Event}.${Action}`
      : never
    : never;
}[keyof WebhookEventMap];

/** GitHub's payload with every field present: a rule may require what GitHub marks optional. */
type Present<T> = T extends object
  ? { [Key in keyof T]-?: Present<NonNullable<T[Key]>> }
  : NonNullable<T>;

/** The payload GitHub documents for one `event.action`. */
type PayloadOf<On extends EventAction> = On extends `${infer Event}.${infer Action}`
  ? Extract<WebhookEventMap[Event & keyof WebhookEventMap], { action: Action }>
  : never;

/** One rule: the event it takes, the fields it reads, what it makes of them. */
interface RuleSpec<Name extends RuleName, Payload, On extends EventAction = EventAction> {
  rule: Name;
  /** `event.action` */
  on: On;
  /** Every payload field it reads: recorded as the delivery's facts (read-rule-fields.ts). */
  fields: { [key: string]: FieldSpec };
  /** From the fields alone: whether any configuration could want it (before config is read). */
  mayWant?: (fields: Fields) => boolean;
  /** The fields as GitHub documents them; else the delivery is `unreadable` for this rule. */
  payload: z.ZodType<Payload>;
  /** The todo, or null when the rule's own settings do not want this one. */
  make(p: Payload, settings: RepositoryConfig['rules'][Name], context: Context): Made | null;
}

type Fields = Record<
  string,
  { state?: unknown; conclusion?: unknown; draft?: unknown } | undefined
>;
type AnyRule = RuleSpec<RuleName, unknown>;
/**
 * A rule, checked against GitHub's own payload types: what its schema reads must be what GitHub
 * documents for its event (a field renamed or retyped there fails to compile here).
 */
const defineRule = <Name extends RuleName, Payload, On extends EventAction>(
  spec: RuleSpec<Name, Payload, On> &
    (Present<PayloadOf<On>> extends Payload
      ? unknown
      : { payload: 'does not fit GitHub’s payload' }),
) => spec as unknown as AnyRule;

const LOGIN = { login: 'value' } as const;
const ISSUE = {
  number: 'value',
  title: 'line',
  body: 'text',
  html_url: 'value',
  author_association: 'value',
  pull_request: 'present',
} as const;
const PULL_REQUEST = {
  number: 'value',
  title: 'line',
  body: 'text',
  html_url: 'value',
  author_association: 'value',
  draft: 'value',
  user: LOGIN,
} as const;

const Login = z.object({ login: z.string() });
const Issue = z.object({
  number: z.number().int(),
  title: z.string(),
  body: z.string().nullish(),
  html_url: z.string(),
  author_association: z.string(),
  pull_request: z.unknown().optional(),
});
const PullRequest = Issue.omit({ pull_request: true });

const FAILED = new Set(['failure', 'timed_out', 'startup_failure']);

/**
 * The default rules and what a repository's config changes of them, one entry per rule: which
 * event it takes, the fields it reads, and the todo it makes (on its queue, for its assignee).
 * Trust is weighed afterwards (evaluate-trust.ts). Every other event makes nothing.
 */
const RULES: AnyRule[] = [
  defineRule({
    rule: 'issue_labeled',
    on: 'issues.labeled',
    fields: { issue: ISSUE, label: { name: 'value' } },
    payload: z.object({ issue: Issue, label: z.object({ name: z.string() }) }),
    make: (p, rule, { where }) =>
      p.label.name.toLowerCase() !== rule.label.toLowerCase()
        ? null
        : {
            title: `${noun(p.issue)} #${p.issue.number} labelled ${p.label.name} ${where}: ${p.issue.title}`,
            ...about(p.issue, 'issue'),
          },
  }),
  defineRule({
    rule: 'issue_assigned',
    on: 'issues.assigned',
    fields: { issue: ISSUE, assignee: LOGIN },
    payload: z.object({ issue: Issue, assignee: Login }),
    make: (p, rule, { where }) =>
      !includesLogin(rule.logins, p.assignee.login)
        ? null
        : {
            title: `${noun(p.issue)} #${p.issue.number} assigned to @${p.assignee.login} ${where}: ${p.issue.title}`,
            ...about(p.issue, 'issue'),
          },
  }),
  defineRule({
    rule: 'comment',
    on: 'issue_comment.created',
    fields: {
      issue: ISSUE,
      comment: { id: 'value', body: 'text', html_url: 'value', author_association: 'value' },
    },
    payload: z.object({
      issue: Issue,
      comment: z.object({
        id: z.number().int(),
        body: z.string(),
        html_url: z.string(),
        author_association: z.string(),
        /** Recorded with the facts (read-rule-fields.ts). */
        first_line: z.string().optional(),
      }),
    }),
    make: (p, rule, { facts, where }) => {
      if (!addressesSwitchboard(p.comment.body, rule)) return null;
      const firstLine =
        p.comment.first_line ?? p.comment.body.split('\n').find((line) => line.trim() !== '') ?? '';
      return {
        title: `comment by @${facts.sender?.login ?? 'ghost'} on #${p.issue.number} ${where}: ${firstLine}`,
        body: `${p.comment.body}\n\n(on ${noun(p.issue)} #${p.issue.number}: ${p.issue.title})`,
        url: p.comment.html_url,
        origin: { association: p.comment.author_association },
        issueNumber: p.issue.number,
        commentId: p.comment.id,
        react: 'comment',
      };
    },
  }),
  defineRule({
    rule: 'pull_request_opened',
    on: 'pull_request.opened',
    fields: { pull_request: PULL_REQUEST },
    // A draft is not ready for review; marking it ready sends ready_for_review, not opened.
    mayWant: (fields) => fields.pull_request?.draft !== true,
    payload: z.object({ pull_request: PullRequest.extend({ draft: z.boolean().nullish() }) }),
    make: (p, _rule, { where }) =>
      p.pull_request.draft
        ? null
        : {
            title: `PR #${p.pull_request.number} opened ${where}: ${p.pull_request.title}`,
            ...about(p.pull_request, null),
          },
  }),
  defineRule({
    rule: 'review_requested',
    on: 'pull_request.review_requested',
    fields: {
      pull_request: PULL_REQUEST,
      requested_reviewer: LOGIN,
      requested_team: { slug: 'value' },
    },
    payload: z.object({
      pull_request: PullRequest,
      requested_reviewer: Login.nullish(),
      requested_team: z.object({ slug: z.string() }).nullish(),
    }),
    make: (p, rule, { where }) => {
      const reviewer = p.requested_reviewer?.login;
      if (rule.reviewers.length > 0 && !(reviewer && includesLogin(rule.reviewers, reviewer)))
        return null;
      const from = reviewer ? `@${reviewer}` : `team ${p.requested_team?.slug ?? 'unknown'}`;
      return {
        title: `review requested from ${from} on PR #${p.pull_request.number} ${where}: ${p.pull_request.title}`,
        ...about(p.pull_request, null),
      };
    },
  }),
  defineRule({
    rule: 'changes_requested',
    on: 'pull_request_review.submitted',
    fields: {
      pull_request: PULL_REQUEST,
      review: {
        state: 'value',
        body: 'text',
        html_url: 'value',
        author_association: 'value',
        user: LOGIN,
      },
    },
    mayWant: (fields) => fields.review?.state === 'changes_requested',
    payload: z.object({
      pull_request: PullRequest,
      review: z.object({
        state: z.string(),
        body: z.string().nullish(),
        html_url: z.string(),
        author_association: z.string(),
        user: Login,
      }),
    }),
    make: (p, _rule, { where }) => ({
      title: `changes requested by @${p.review.user.login} on PR #${p.pull_request.number} ${where}: ${p.pull_request.title}`,
      body: p.review.body ?? null,
      url: p.review.html_url,
      origin: { association: p.review.author_association },
      issueNumber: p.pull_request.number,
      commentId: null,
      react: null,
    }),
  }),
  defineRule({
    rule: 'check_suite_failed',
    on: 'check_suite.completed',
    fields: {
      check_suite: {
        head_branch: 'value',
        head_sha: 'value',
        conclusion: 'value',
        app: { slug: 'value', name: 'value' },
        pull_requests: [{ number: 'value', head: { repo: { id: 'value' } } }],
      },
    },
    mayWant: (fields) => FAILED.has(String(fields.check_suite?.conclusion)),
    payload: z.object({
      check_suite: z.object({
        head_branch: z.string().nullable(),
        head_sha: z.string(),
        conclusion: z.string().nullable(),
        app: z.object({ slug: z.string().nullish(), name: z.string() }),
        pull_requests: z.array(
          z.object({
            number: z.number().int(),
            head: z.object({ repo: z.object({ id: z.number() }) }),
          }),
        ),
      }),
    }),
    make: ({ check_suite: suite }, rule, { repository, where }) => {
      if (rule.ignore_apps.includes(suite.app.slug ?? suite.app.name)) return null;
      const pr = suite.pull_requests[0];
      return {
        title: `check suite ${suite.app.name} ${describe(suite.conclusion)} on ${suite.head_branch ?? suite.head_sha.slice(0, 7)} ${where}`,
        body: ciBody({
          conclusion: suite.conclusion,
          branch: suite.head_branch,
          sha: suite.head_sha,
          by: `app ${suite.app.name}`,
          pr: pr?.number,
        }),
        url: `${repository.htmlUrl}/commit/${suite.head_sha}/checks`,
        // GitHub gives a fork's suite no branch (head_branch null); one on a branch of this
        // repository names it, and any pull request it lists has its head here.
        origin: {
          sameRepository:
            suite.head_branch !== null &&
            suite.pull_requests.every((request) => request.head.repo.id === repository.id),
        },
        issueNumber: pr?.number ?? null,
        commentId: null,
        react: null,
      };
    },
  }),
  defineRule({
    rule: 'workflow_run_failed',
    on: 'workflow_run.completed',
    fields: {
      workflow: { name: 'value' },
      workflow_run: {
        name: 'value',
        html_url: 'value',
        head_branch: 'value',
        head_sha: 'value',
        conclusion: 'value',
        run_number: 'value',
        head_repository: { id: 'value' },
      },
    },
    mayWant: (fields) => FAILED.has(String(fields.workflow_run?.conclusion)),
    payload: z.object({
      workflow: z.object({ name: z.string() }).nullish(),
      workflow_run: z.object({
        name: z.string().nullish(),
        html_url: z.string(),
        head_branch: z.string().nullable(),
        head_sha: z.string(),
        conclusion: z.string().nullable(),
        run_number: z.number().int(),
        head_repository: z.object({ id: z.number() }).nullable(),
      }),
    }),
    make: (p, _rule, { repository, where }) => {
      const run = p.workflow_run;
      const name = p.workflow?.name || run.name || 'workflow';
      return {
        title: `workflow ${name} ${describe(run.conclusion)} on ${run.head_branch ?? run.head_sha.slice(0, 7)} ${where} (run #${run.run_number})`,
        body: ciBody({
          conclusion: run.conclusion,
          branch: run.head_branch,
          sha: run.head_sha,
          by: `workflow ${name}`,
        }),
        url: run.html_url,
        origin: { sameRepository: run.head_repository?.id === repository.id },
        issueNumber: null,
        commentId: null,
        react: null,
      };
    },
  }),
];

const BY_EVENT = new Map<string, AnyRule>(RULES.map((spec) => [spec.on, spec]));

/** Every payload field a rule reads (and the action), merged: what a delivery's facts keep. */
export const RULE_FIELDS: { [key: string]: FieldSpec } = RULES.reduce(
  (merged, spec) => mergeFields(merged, spec.fields),
  { action: 'value' } as { [key: string]: FieldSpec },
);

/**
 * Whether any configuration could make a rule match this event. Checked before the repository's
 * config is fetched, so that the many events no rule wants (pushes, green CI) cost no API call.
 */
export function mayMatch(facts: Pick<GitHubFacts, 'event' | 'action' | 'fields'>): boolean {
  const spec = BY_EVENT.get(`${facts.event}.${facts.action}`);
  return spec !== undefined && (spec.mayWant?.(facts.fields as Fields) ?? true);
}

/**
 * The rule for this event, with the repository's settings: the todo it asks for, nothing, or
 * why the payload could not be read for it.
 */
export function routeEvent(facts: GitHubFacts, config: RepositoryConfig): Route {
  const repository = facts.repository;
  if (!repository || !mayMatch(facts)) return { outcome: 'no_rule' };
  const spec = BY_EVENT.get(`${facts.event}.${facts.action}`)!;
  const settings = config.rules[spec.rule];
  if (!settings.enabled) return { outcome: 'no_rule' };
  const kind = `github.${facts.event}.${facts.action}`;
  const parsed = spec.payload.safeParse(facts.fields);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return {
      outcome: 'unreadable',
      note: `${kind}: payload field ${issue.path.join('.')} is not as GitHub documents it`,
    };
  }
  const made = spec.make(parsed.data, settings, {
    facts,
    repository,
    where: `in ${repository.fullName}`,
  });
  if (!made) return { outcome: 'no_rule' };
  const draft: Draft = {
    rule: spec.rule,
    queue: settings.queue,
    assignee: settings.assignee,
    kind,
    title: made.title,
    body: made.body,
    url: made.url,
    origin: made.origin,
    react: made.react,
    target: { issue_number: made.issueNumber, comment_id: made.commentId },
  };
  return { outcome: 'matched', draft };
}

const noun = (issue: { pull_request?: unknown }) => (issue.pull_request ? 'PR' : 'issue');

/** An issue's or a pull request's todo: its text and link, its author's association. */
const about = (item: z.infer<typeof PullRequest>, react: Made['react']): Omit<Made, 'title'> => ({
  body: item.body ?? null,
  url: item.html_url,
  origin: { association: item.author_association },
  issueNumber: item.number,
  commentId: null,
  react,
});

const describe = (conclusion: string | null) =>
  conclusion === 'timed_out'
    ? 'timed out'
    : conclusion === 'startup_failure'
      ? 'failed to start'
      : 'failed';

function ciBody(run: {
  conclusion: string | null;
  branch: string | null;
  sha: string;
  by: string;
  pr?: number | undefined;
}): string {
  return [
    `conclusion: ${run.conclusion ?? 'unknown'}`,
    `from: ${run.by}`,
    `branch: ${run.branch ?? '(none: a fork or a detached commit)'}`,
    `commit: ${run.sha}`,
    ...(run.pr ? [`pull request: #${run.pr}`] : []),
  ].join('\n');
}

function mergeFields(
  into: { [key: string]: FieldSpec },
  from: { [key: string]: FieldSpec },
): { [key: string]: FieldSpec } {
  const out = { ...into };
  for (const [key, spec] of Object.entries(from)) {
    const had = out[key];
    out[key] =
      had && typeof had === 'object' && !Array.isArray(had) && typeof spec === 'object'
        ? mergeFields(had, spec as { [key: string]: FieldSpec })
        : spec;
  }
  return out;
}
