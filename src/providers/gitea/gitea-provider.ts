import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';
import { addressesSwitchboard } from '../addresses-switchboard.js';
import { factFirstLine, factLine, factText, factValue } from '../fact-text.js';
import { pathPart, postToSourceApi } from '../post-to-source-api.js';
import { header, type Provider, type ProviderKind, type Route } from '../provider.js';
import { sameLogin } from '../same-login.js';
import type { SourceFacts } from '../source-facts.js';
import { sourceProvider } from '../source-provider.js';
import { verifySha256Signature } from '../verify-sha256-signature.js';
import { giteaRules, type GiteaRules } from './gitea-rules.js';

/**
 * Gitea, and Forgejo (its fork, which sends the same payloads under its own header names and,
 * for compatibility, Gitea's too). Each delivery carries `X-Gitea-Signature` (Forgejo:
 * `X-Forgejo-Signature`), the bare hex HMAC-SHA256 of the body under the webhook's secret, and
 * `X-Hub-Signature-256` (`sha256=` and the same hex); `X-Gitea-Delivery` is its id, `X-Gitea-Event`
 * the event (`issues`, `issue_comment`, `pull_request`), `X-Gitea-Event-Type` the finer one
 * (`issue_label`, `issue_assign`, `pull_request_review_request`). Replies go back as comments
 * (`POST /api/v1/repos/{owner}/{repo}/issues/{index}/comments`, pull requests included).
 */
export function createGiteaProvider(
  kind: Extract<ProviderKind, 'gitea' | 'forgejo'>,
): Provider<GiteaRules> {
  // Forgejo's own names first; Gitea's as well, which Forgejo also sends.
  const prefixes = kind === 'forgejo' ? ['x-forgejo-', 'x-gitea-'] : ['x-gitea-'];
  const first = (headers: IncomingHttpHeaders, suffix: string) =>
    prefixes.map((prefix) => header(headers, prefix + suffix)).find((v) => v !== undefined);

  const named = (suffix: string) =>
    kind === 'forgejo' ? [`X-Forgejo-${suffix}`, `X-Gitea-${suffix}`] : [`X-Gitea-${suffix}`];

  return sourceProvider({
    kind,
    name: kind === 'forgejo' ? 'Forgejo' : 'Gitea',
    // The event decides every rule: read without it, a delivery is no event at all.
    requiredHeaders: [named('Event'), named('Delivery')],
    async verify(raw, headers, secrets) {
      const bare = first(headers, 'signature');
      const hub = header(headers, 'x-hub-signature-256');
      const hex = bare ?? (hub?.startsWith('sha256=') ? hub.slice(7) : undefined);
      if (hex === undefined) {
        return {
          ok: false,
          reason: `no signature: ${kind === 'forgejo' ? 'X-Forgejo-Signature, ' : ''}X-Gitea-Signature or X-Hub-Signature-256 is required (set the webhook's secret)`,
        };
      }
      return verifySha256Signature(
        raw,
        `sha256=${hex}`,
        secrets,
        "the signature does not match the body under this source's secret",
      );
    },
    deliveryId: (headers) => first(headers, 'delivery') ?? null,
    readFacts(headers, payload) {
      return readGiteaFacts(first(headers, 'event') ?? 'unknown', payload);
    },
    rules: giteaRules,
    route: (facts, rules) => routeGitea(kind, facts as GiteaFacts, rules),
    send: async (request, clients, api) => {
      const { target } = request;
      await postToSourceApi(clients.outbound, {
        kind,
        api,
        path: `/api/v1/repos/${pathPart(target.owner)}/${pathPart(target.repo)}/issues/${pathPart(target.number)}/comments`,
        credential: { authorization: `token ${api.token}` },
        json: { body: request.body },
        signal: request.signal,
      });
    },
  });
}

const Str = z.string();
const User = z
  .object({ id: z.number().int().optional(), login: Str.max(255) })
  .nullable()
  .catch(null);
const Repository = z
  .object({
    name: Str.max(255),
    full_name: Str.max(511),
    html_url: Str.max(2048),
    owner: z.object({ login: Str.max(255) }),
  })
  .nullable()
  .catch(null);
const Issue = z
  .object({
    number: z.number().int(),
    title: Str,
    body: Str.nullish(),
    html_url: Str.max(2048).nullish(),
    user: User,
    assignees: z.array(z.object({ login: Str.max(255) })).nullish(),
    assignee: z.object({ login: Str.max(255) }).nullish(),
    labels: z.array(z.object({ name: Str.max(255) })).nullish(),
    pull_request: z.unknown().optional(),
  })
  .nullable()
  .catch(null);
const PullRequest = z
  .object({
    number: z.number().int(),
    title: Str,
    body: Str.nullish(),
    html_url: Str.max(2048),
    user: User,
    draft: z.boolean().nullish(),
  })
  .nullable()
  .catch(null);
const Comment = z
  .object({ id: z.number().int(), body: Str, html_url: Str.max(2048), user: User })
  .nullable()
  .catch(null);

/** Gitea's own accounts that act on nobody's behalf: `gitea-actions` (-2) and the ghost (-1). */
const SYSTEM_LOGINS = new Set(['gitea-actions', 'forgejo-actions', 'ghost']);

function readGiteaFacts(event: string, payload: Record<string, unknown>): GiteaFacts {
  const repository = Repository.parse(payload.repository ?? null);
  const sender = User.parse(payload.sender ?? null);
  const issue = Issue.parse(payload.issue ?? null);
  const pull = PullRequest.parse(payload.pull_request ?? null);
  const comment = Comment.parse(payload.comment ?? null);
  const reviewer = User.parse(payload.requested_reviewer ?? null);
  const action =
    typeof payload.action === 'string' ? factValue(payload.action).slice(0, 100) : null;
  return {
    event: factValue(event).slice(0, 100),
    action,
    subject: repository ? factValue(repository.full_name) : null,
    actor: sender
      ? {
          login: factValue(sender.login),
          bot:
            /\[bot\]$/i.test(sender.login) ||
            SYSTEM_LOGINS.has(sender.login.toLowerCase()) ||
            (sender.id !== undefined && sender.id < 0),
        }
      : null,
    author: (comment?.user ?? pull?.user ?? issue?.user)?.login ?? null,
    repository: repository && {
      owner: factValue(repository.owner.login),
      name: factValue(repository.name),
      html_url: factValue(repository.html_url),
    },
    issue: issue && {
      number: issue.number,
      title: factLine(issue.title),
      body: issue.body == null ? null : factText(issue.body),
      html_url: issue.html_url == null ? null : factValue(issue.html_url),
      is_pull_request: issue.pull_request != null,
      labels: (issue.labels ?? []).slice(0, 100).map((label) => factValue(label.name)),
      assignees: [
        ...new Set(
          [...(issue.assignees ?? []), ...(issue.assignee ? [issue.assignee] : [])]
            .slice(0, 100)
            .map((user) => factValue(user.login)),
        ),
      ],
    },
    pull_request: pull && {
      number: pull.number,
      title: factLine(pull.title),
      body: pull.body == null ? null : factText(pull.body),
      html_url: factValue(pull.html_url),
      draft: pull.draft === true,
    },
    comment: comment && {
      id: comment.id,
      body: factText(comment.body),
      first_line: factFirstLine(comment.body),
      html_url: factValue(comment.html_url),
    },
    requested_reviewer: reviewer ? factValue(reviewer.login) : null,
  };
}

interface GiteaFacts extends SourceFacts {
  repository: { owner: string; name: string; html_url: string } | null;
  issue: {
    number: number;
    title: string;
    body: string | null;
    html_url: string | null;
    is_pull_request: boolean;
    labels: string[];
    assignees: string[];
  } | null;
  pull_request: {
    number: number;
    title: string;
    body: string | null;
    html_url: string;
    draft: boolean;
  } | null;
  comment: { id: number; body: string; first_line: string; html_url: string } | null;
  requested_reviewer: string | null;
}

function routeGitea(kind: ProviderKind, facts: GiteaFacts, rules: GiteaRules): Route {
  const repository = facts.repository;
  if (!repository) return { outcome: 'no_rule' };
  const where = `in ${facts.subject}`;
  const noun = (issue: { is_pull_request: boolean }) => (issue.is_pull_request ? 'PR' : 'issue');
  const target = (number: number) => ({
    owner: repository.owner,
    repo: repository.name,
    number,
  });
  const missing = (field: string): Route => ({
    outcome: 'unreadable',
    note: `${kind} ${facts.event}.${facts.action}: payload field ${field} is not as ${kind === 'forgejo' ? 'Forgejo' : 'Gitea'} documents it`,
  });
  const { rules: r } = rules;
  const base = (name: keyof GiteaRules['rules']) => ({
    rule: name,
    queue: r[name].queue,
    assignee: r[name].assignee,
    kind: `${kind}.${facts.event}.${facts.action}`.replace(/[^a-z0-9_.]/g, '_'),
  });

  switch (`${facts.event}.${facts.action}`) {
    case 'issues.label_updated': {
      if (!r.issue_labeled.enabled) break;
      const issue = facts.issue;
      if (!issue) return missing('issue');
      // Gitea says the labels changed, not which one was added: the rule's label being there is
      // the match, and the todo's key (one per issue and rule while it is open) keeps a later
      // change from making a second.
      const wanted = r.issue_labeled.label.toLowerCase();
      if (!issue.labels.some((label) => label.toLowerCase() === wanted)) break;
      return {
        outcome: 'matched',
        draft: {
          ...base('issue_labeled'),
          title: `${noun(issue)} #${issue.number} labelled ${r.issue_labeled.label} ${where}: ${issue.title}`,
          body: issue.body,
          url: issue.html_url,
          target: target(issue.number),
          key: `${facts.subject}#${issue.number}`,
        },
      };
    }
    case 'issues.assigned': {
      if (!r.issue_assigned.enabled) break;
      const issue = facts.issue;
      if (!issue) return missing('issue');
      const assignee = issue.assignees.find((login) =>
        r.issue_assigned.logins.some((wanted) => sameLogin(wanted, login)),
      );
      if (!assignee) break;
      return {
        outcome: 'matched',
        draft: {
          ...base('issue_assigned'),
          title: `${noun(issue)} #${issue.number} assigned to @${assignee} ${where}: ${issue.title}`,
          body: issue.body,
          url: issue.html_url,
          target: target(issue.number),
        },
      };
    }
    case 'issue_comment.created': {
      if (!r.comment.enabled) break;
      const { issue, comment } = facts;
      if (!issue) return missing('issue');
      if (!comment) return missing('comment');
      if (!addressesSwitchboard(comment.body, r.comment)) break;
      const firstLine = comment.first_line;
      return {
        outcome: 'matched',
        draft: {
          ...base('comment'),
          title: `comment by @${facts.actor?.login ?? 'ghost'} on #${issue.number} ${where}: ${firstLine}`,
          body: `${comment.body}\n\n(on ${noun(issue)} #${issue.number}: ${issue.title})`,
          url: comment.html_url,
          target: target(issue.number),
        },
      };
    }
    case 'pull_request.opened': {
      if (!r.pull_request_opened.enabled) break;
      const pull = facts.pull_request;
      if (!pull) return missing('pull_request');
      if (pull.draft) break;
      return {
        outcome: 'matched',
        draft: {
          ...base('pull_request_opened'),
          title: `PR #${pull.number} opened ${where}: ${pull.title}`,
          body: pull.body,
          url: pull.html_url,
          target: target(pull.number),
        },
      };
    }
    case 'pull_request.review_requested': {
      if (!r.review_requested.enabled) break;
      const pull = facts.pull_request;
      if (!pull) return missing('pull_request');
      const reviewer = facts.requested_reviewer;
      const wanted = r.review_requested.reviewers;
      if (wanted.length > 0 && !(reviewer && wanted.some((login) => sameLogin(login, reviewer))))
        break;
      return {
        outcome: 'matched',
        draft: {
          ...base('review_requested'),
          title: `review requested from @${reviewer ?? 'a team'} on PR #${pull.number} ${where}: ${pull.title}`,
          body: pull.body,
          url: pull.html_url,
          target: target(pull.number),
        },
      };
    }
  }
  return { outcome: 'no_rule' };
}
