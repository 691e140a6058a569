import { z } from 'zod';
import { addressesSwitchboard } from '../addresses-switchboard.js';
import type { Origin } from './evaluate-trust.js';
import type { DeliveryFacts } from './read-delivery-facts.js';
import type { RepositoryConfig } from './repository-config.js';

export type RuleName = keyof RepositoryConfig['rules'];

/** A todo a rule asks for, before trust decides whether it waits for a human. */
export interface TodoDraft {
  rule: RuleName;
  queue: string;
  kind: string;
  /** Raw GitHub text: the ledger neutralises and caps titles and bodies (never do it twice). */
  title: string;
  body: string | null;
  url: string | null;
  assignee: string | null;
  origin: Origin;
  /** Where write-back goes: the issue or pull request, and the comment that asked, if one did. */
  issueNumber: number | null;
  commentId: number | null;
  /** What gets the 👀 reaction once the todo exists. */
  react: 'issue' | 'comment' | null;
}

export type Route =
  | { outcome: 'matched'; draft: TodoDraft }
  | { outcome: 'no_rule' }
  | { outcome: 'unreadable'; note: string };

const FAILED = new Set(['failure', 'timed_out', 'startup_failure']);

/**
 * Whether any configuration could make a rule match this event. Checked before the repository's
 * config is fetched, so that the many events no rule wants (pushes, green CI) cost no API call.
 */
export function mayMatch(facts: DeliveryFacts, payload: unknown): boolean {
  const fields = payload as Record<string, { state?: unknown; conclusion?: unknown } | undefined>;
  switch (`${facts.event}.${facts.action}`) {
    case 'issues.labeled':
    case 'issues.assigned':
    case 'issue_comment.created':
    case 'pull_request.review_requested':
      return true;
    case 'pull_request.opened':
      return (fields.pull_request as { draft?: unknown } | undefined)?.draft !== true;
    case 'pull_request_review.submitted':
      return fields.review?.state === 'changes_requested';
    case 'check_suite.completed':
      return FAILED.has(String(fields.check_suite?.conclusion));
    case 'workflow_run.completed':
      return FAILED.has(String(fields.workflow_run?.conclusion));
    default:
      return false;
  }
}

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

const IssueLabeled = z.object({ issue: Issue, label: z.object({ name: z.string() }) });
const IssueAssigned = z.object({ issue: Issue, assignee: Login });
const CommentCreated = z.object({
  issue: Issue,
  comment: z.object({
    id: z.number().int(),
    body: z.string(),
    html_url: z.string(),
    author_association: z.string(),
    /** Recorded with the facts (read-rule-fields.ts). */
    first_line: z.string().optional(),
  }),
});
const PullRequestOpened = z.object({
  pull_request: PullRequest.extend({ draft: z.boolean().nullish() }),
});
const ReviewRequested = z.object({
  pull_request: PullRequest,
  requested_reviewer: Login.nullish(),
  requested_team: z.object({ slug: z.string() }).nullish(),
});
const ReviewSubmitted = z.object({
  pull_request: PullRequest,
  review: z.object({
    state: z.string(),
    body: z.string().nullish(),
    html_url: z.string(),
    author_association: z.string(),
    user: Login,
  }),
});
const CheckSuite = z.object({
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
});
const WorkflowRun = z.object({
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
});

/**
 * The default rules and the repository's overrides, event by event: which events become todos,
 * on which queue, with which title. Trust is decided afterwards (evaluate-trust.ts).
 */
export function routeEvent(
  facts: DeliveryFacts,
  payload: unknown,
  config: RepositoryConfig,
): Route {
  const repository = facts.repository;
  if (!repository || !mayMatch(facts, payload)) return { outcome: 'no_rule' };
  const { rules } = config;
  const where = `in ${repository.fullName}`;
  const kind = `github.${facts.event}.${facts.action}`;
  const read = <T>(schema: z.ZodType<T>): T | { unreadable: string } => {
    const parsed = schema.safeParse(payload);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0]!;
    return {
      unreadable: `${kind}: payload field ${issue.path.join('.')} is not as GitHub documents it`,
    };
  };
  const matched = (
    rule: RuleName,
    draft: Omit<TodoDraft, 'rule' | 'queue' | 'kind' | 'assignee'>,
  ): Route => ({
    outcome: 'matched',
    draft: { rule, queue: rules[rule].queue, kind, assignee: rules[rule].assignee, ...draft },
  });

  switch (`${facts.event}.${facts.action}`) {
    case 'issues.labeled': {
      const rule = rules.issue_labeled;
      if (!rule.enabled) break;
      const p = read(IssueLabeled);
      if ('unreadable' in p) return { outcome: 'unreadable', note: p.unreadable };
      if (p.label.name.toLowerCase() !== rule.label.toLowerCase()) break;
      return matched('issue_labeled', {
        title: `${noun(p.issue)} #${p.issue.number} labelled ${p.label.name} ${where}: ${p.issue.title}`,
        body: p.issue.body ?? null,
        url: p.issue.html_url,
        origin: { association: p.issue.author_association },
        issueNumber: p.issue.number,
        commentId: null,
        react: 'issue',
      });
    }
    case 'issues.assigned': {
      const rule = rules.issue_assigned;
      if (!rule.enabled) break;
      const p = read(IssueAssigned);
      if ('unreadable' in p) return { outcome: 'unreadable', note: p.unreadable };
      if (!includesLogin(rule.logins, p.assignee.login)) break;
      return matched('issue_assigned', {
        title: `${noun(p.issue)} #${p.issue.number} assigned to @${p.assignee.login} ${where}: ${p.issue.title}`,
        body: p.issue.body ?? null,
        url: p.issue.html_url,
        origin: { association: p.issue.author_association },
        issueNumber: p.issue.number,
        commentId: null,
        react: 'issue',
      });
    }
    case 'issue_comment.created': {
      const rule = rules.comment;
      if (!rule.enabled) break;
      const p = read(CommentCreated);
      if ('unreadable' in p) return { outcome: 'unreadable', note: p.unreadable };
      if (!addressesSwitchboard(p.comment.body, rule)) break;
      const firstLine =
        p.comment.first_line ?? p.comment.body.split('\n').find((line) => line.trim() !== '') ?? '';
      return matched('comment', {
        title: `comment by @${facts.sender?.login ?? 'ghost'} on #${p.issue.number} ${where}: ${firstLine}`,
        body: `${p.comment.body}\n\n(on ${noun(p.issue)} #${p.issue.number}: ${p.issue.title})`,
        url: p.comment.html_url,
        origin: { association: p.comment.author_association },
        issueNumber: p.issue.number,
        commentId: p.comment.id,
        react: 'comment',
      });
    }
    case 'pull_request.opened': {
      const rule = rules.pull_request_opened;
      if (!rule.enabled) break;
      const p = read(PullRequestOpened);
      if ('unreadable' in p) return { outcome: 'unreadable', note: p.unreadable };
      // A draft is not ready for review; marking it ready sends ready_for_review, not opened.
      if (p.pull_request.draft) break;
      return matched('pull_request_opened', {
        title: `PR #${p.pull_request.number} opened ${where}: ${p.pull_request.title}`,
        body: p.pull_request.body ?? null,
        url: p.pull_request.html_url,
        origin: { association: p.pull_request.author_association },
        issueNumber: p.pull_request.number,
        commentId: null,
        react: null,
      });
    }
    case 'pull_request.review_requested': {
      const rule = rules.review_requested;
      if (!rule.enabled) break;
      const p = read(ReviewRequested);
      if ('unreadable' in p) return { outcome: 'unreadable', note: p.unreadable };
      const reviewer = p.requested_reviewer?.login;
      if (rule.reviewers.length > 0 && !(reviewer && includesLogin(rule.reviewers, reviewer)))
        break;
      const from = reviewer ? `@${reviewer}` : `team ${p.requested_team?.slug ?? 'unknown'}`;
      return matched('review_requested', {
        title: `review requested from ${from} on PR #${p.pull_request.number} ${where}: ${p.pull_request.title}`,
        body: p.pull_request.body ?? null,
        url: p.pull_request.html_url,
        origin: { association: p.pull_request.author_association },
        issueNumber: p.pull_request.number,
        commentId: null,
        react: null,
      });
    }
    case 'pull_request_review.submitted': {
      const rule = rules.changes_requested;
      if (!rule.enabled) break;
      const p = read(ReviewSubmitted);
      if ('unreadable' in p) return { outcome: 'unreadable', note: p.unreadable };
      return matched('changes_requested', {
        title: `changes requested by @${p.review.user.login} on PR #${p.pull_request.number} ${where}: ${p.pull_request.title}`,
        body: p.review.body ?? null,
        url: p.review.html_url,
        origin: { association: p.review.author_association },
        issueNumber: p.pull_request.number,
        commentId: null,
        react: null,
      });
    }
    case 'check_suite.completed': {
      const rule = rules.check_suite_failed;
      if (!rule.enabled) break;
      const p = read(CheckSuite);
      if ('unreadable' in p) return { outcome: 'unreadable', note: p.unreadable };
      const suite = p.check_suite;
      const app = suite.app.slug ?? suite.app.name;
      if (rule.ignore_apps.includes(app)) break;
      const on = suite.head_branch ?? suite.head_sha.slice(0, 7);
      const pr = suite.pull_requests[0];
      return matched('check_suite_failed', {
        title: `check suite ${suite.app.name} ${describe(suite.conclusion)} on ${on} ${where}`,
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
      });
    }
    case 'workflow_run.completed': {
      const rule = rules.workflow_run_failed;
      if (!rule.enabled) break;
      const p = read(WorkflowRun);
      if ('unreadable' in p) return { outcome: 'unreadable', note: p.unreadable };
      const run = p.workflow_run;
      const name = p.workflow?.name || run.name || 'workflow';
      const on = run.head_branch ?? run.head_sha.slice(0, 7);
      return matched('workflow_run_failed', {
        title: `workflow ${name} ${describe(run.conclusion)} on ${on} ${where} (run #${run.run_number})`,
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
      });
    }
  }
  return { outcome: 'no_rule' };
}

const noun = (issue: { pull_request?: unknown }) => (issue.pull_request ? 'PR' : 'issue');

const includesLogin = (logins: string[], login: string) =>
  logins.some((candidate) => candidate.toLowerCase() === login.toLowerCase());

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
