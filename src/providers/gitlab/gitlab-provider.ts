import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { addressesSwitchboard } from '../addresses-switchboard.js';
import { factFirstLine, factLine, factText, factValue } from '../fact-text.js';
import { pathPart, postToSourceApi } from '../post-to-source-api.js';
import { header, type Provider, type Route } from '../provider.js';
import { sameLogin } from '../same-login.js';
import type { SourceFacts } from '../source-facts.js';
import { sourceProvider } from '../source-provider.js';
import { verifyStandardWebhook } from '../standard-webhooks/verify-standard-webhook.js';
import { gitlabRules, type GitLabRules } from './gitlab-rules.js';

/**
 * GitLab. A hook's secret token comes back as `X-Gitlab-Token`, compared here in constant time;
 * a hook with a signing token (a `whsec_` secret) signs per Standard Webhooks instead, which also
 * dates each delivery. The delivery's id is `Idempotency-Key` (GitLab 17.4 on: the same on a
 * retry), else `X-Gitlab-Event-UUID`; the event is `X-Gitlab-Event` (`Note Hook`, `Merge Request
 * Hook`, `Pipeline Hook`, `Issue Hook`) and the payload's `object_kind`. GitLab disables a hook
 * that keeps failing, 4xx answers included: only a failed authentication is refused. Replies go
 * back as notes (`POST /api/v4/projects/{id}/{issues|merge_requests}/{iid}/notes`).
 */
export const gitlabProvider: Provider<GitLabRules> = sourceProvider({
  kind: 'gitlab',
  name: 'GitLab',
  // Every GitLab sends its event; an id only from 15 on (the body's hash stands in before).
  requiredHeaders: [['X-Gitlab-Event']],
  lenient: true,
  verify(raw, headers, secrets) {
    const signing = secrets.filter((secret) => secret.startsWith('whsec_'));
    const tokens = secrets.filter((secret) => !secret.startsWith('whsec_'));
    if (signing.length > 0 && header(headers, 'webhook-signature') !== undefined) {
      return verifyStandardWebhook(raw, headers, signing);
    }
    const given = header(headers, 'x-gitlab-token');
    if (given === undefined) {
      return {
        ok: false,
        reason:
          signing.length > 0
            ? 'no signature: this source expects webhook-signature (the hook’s signing token)'
            : "no X-Gitlab-Token: set the hook's secret token to this source's secret",
      };
    }
    // Hashed first, so that tokens of any length compare in the same time.
    const digest = (text: string) => createHash('sha256').update(text).digest();
    let matched = false;
    for (const token of tokens) matched = timingSafeEqual(digest(token), digest(given)) || matched;
    return matched
      ? { ok: true }
      : { ok: false, reason: "X-Gitlab-Token does not match this source's secret" };
  },
  deliveryId: (headers) =>
    header(headers, 'idempotency-key') ??
    header(headers, 'webhook-id') ??
    header(headers, 'x-gitlab-event-uuid') ??
    null,
  readFacts: (headers, payload) => readGitLabFacts(header(headers, 'x-gitlab-event'), payload),
  rules: gitlabRules,
  route: (facts, rules) => routeGitLab(facts as GitLabFacts, rules),
  send: async (request, clients, api) => {
    const { target } = request;
    const noun = target.noun === 'merge_requests' ? 'merge_requests' : 'issues';
    await postToSourceApi(clients.outbound, {
      kind: 'gitlab',
      api,
      path: `/api/v4/projects/${pathPart(target.project_id)}/${noun}/${pathPart(target.iid)}/notes`,
      credential: { 'private-token': api.token },
      json: { body: request.body },
      signal: request.signal,
    });
  },
});

const Str = z.string();
const User = z
  .object({ username: Str.max(255), name: Str.max(255).nullish() })
  .nullable()
  .catch(null);
const Project = z
  .object({ id: z.number().int(), path_with_namespace: Str.max(511), web_url: Str.max(2048) })
  .nullable()
  .catch(null);
const Attributes = z
  .object({
    id: z.number().int().nullish(),
    iid: z.number().int().nullish(),
    title: Str.nullish(),
    description: Str.nullish(),
    note: Str.nullish(),
    noteable_type: Str.max(50).nullish(),
    url: Str.max(2048).nullish(),
    action: Str.max(50).nullish(),
    status: Str.max(50).nullish(),
    ref: Str.max(255).nullish(),
    sha: Str.max(64).nullish(),
    draft: z.boolean().nullish(),
    work_in_progress: z.boolean().nullish(),
  })
  .nullable()
  .catch(null);
const Titled = z
  .object({ iid: z.number().int(), title: Str, url: Str.max(2048).nullish() })
  .nullable()
  .catch(null);
const Labels = z.array(z.object({ title: Str.max(255) })).catch([]);
const Reviewers = z.array(z.object({ username: Str.max(255) })).catch([]);
const Changes = z
  .object({
    labels: z.object({ previous: Labels, current: Labels }).nullish(),
    reviewers: z.object({ previous: Reviewers, current: Reviewers }).nullish(),
  })
  .nullable()
  .catch(null);

/**
 * GitLab's accounts that act for no human: project and group access tokens' bots
 * (`project_42_bot_…`, `group_7_bot_…`), the ghost, and its service bots.
 */
const BOT =
  /^(project|group)_\d+_bot(_[0-9a-f]+)?$|^(ghost|support-bot|alert-bot|gitlab-bot|gitlab-admin-bot)$|[-_]bot$/i;

interface GitLabFacts extends SourceFacts {
  object_kind: string | null;
  project: { id: number; path: string; web_url: string } | null;
  attributes: {
    id: number | null;
    iid: number | null;
    title: string | null;
    description: string | null;
    note: string | null;
    note_first_line: string | null;
    noteable_type: string | null;
    url: string | null;
    action: string | null;
    status: string | null;
    ref: string | null;
    sha: string | null;
    draft: boolean;
  } | null;
  /** The issue or merge request a note is on. */
  noteable: { iid: number; title: string; url: string | null } | null;
  labels_added: string[];
  reviewers_added: string[];
}

function readGitLabFacts(event: string | undefined, payload: Record<string, unknown>): GitLabFacts {
  const user = User.parse(payload.user ?? null);
  const project = Project.parse(payload.project ?? null);
  const a = Attributes.parse(payload.object_attributes ?? null);
  const kind =
    typeof payload.object_kind === 'string' ? factValue(payload.object_kind).slice(0, 50) : null;
  const noteable = Titled.parse(payload.merge_request ?? payload.issue ?? null);
  const changes = Changes.parse(payload.changes ?? null);
  const added = <T>(
    change: { previous: T[]; current: T[] } | null | undefined,
    key: (item: T) => string,
  ) => {
    if (!change) return [];
    const before = new Set(change.previous.map(key));
    return change.current
      .map(key)
      .filter((item) => !before.has(item))
      .slice(0, 100)
      .map(factValue);
  };
  // An issue or merge request opened with labels already on it adds them too.
  const openedLabels =
    kind === 'issue' && a?.action === 'open'
      ? Labels.parse(payload.labels ?? []).map((label) => factValue(label.title))
      : [];
  return {
    event: factValue(event ?? kind ?? 'unknown').slice(0, 100),
    action: a?.action ? factValue(a.action) : a?.status ? factValue(a.status) : null,
    subject: project ? factValue(project.path_with_namespace) : null,
    actor: user ? { login: factValue(user.username), bot: BOT.test(user.username) } : null,
    object_kind: kind,
    project: project && {
      id: project.id,
      path: factValue(project.path_with_namespace),
      web_url: factValue(project.web_url),
    },
    attributes: a && {
      id: a.id ?? null,
      iid: a.iid ?? null,
      title: a.title == null ? null : factLine(a.title),
      description: a.description == null ? null : factText(a.description),
      note: a.note == null ? null : factText(a.note),
      note_first_line: a.note == null ? null : factFirstLine(a.note),
      noteable_type: a.noteable_type ?? null,
      url: a.url == null ? null : factValue(a.url),
      action: a.action ?? null,
      status: a.status ?? null,
      ref: a.ref == null ? null : factValue(a.ref),
      sha: a.sha ?? null,
      draft: a.draft === true || a.work_in_progress === true,
    },
    noteable: noteable && {
      iid: noteable.iid,
      title: factLine(noteable.title),
      url: noteable.url == null ? null : factValue(noteable.url),
    },
    labels_added: [
      ...new Set([...added(changes?.labels, (label) => label.title), ...openedLabels]),
    ],
    reviewers_added: added(changes?.reviewers, (user) => user.username),
  };
}

function routeGitLab(facts: GitLabFacts, { rules: r }: GitLabRules): Route {
  const { project, attributes: a } = facts;
  if (!project || !a) return { outcome: 'no_rule' };
  const where = `in ${project.path}`;
  const base = (name: keyof GitLabRules['rules']) => ({
    rule: name,
    queue: r[name].queue,
    assignee: r[name].assignee,
    kind: `gitlab.${facts.object_kind ?? 'event'}.${facts.action ?? 'none'}`
      .toLowerCase()
      .replace(/[^a-z0-9_.]/g, '_'),
  });
  const target = (noun: 'issues' | 'merge_requests', iid: number) => ({
    project_id: project.id,
    noun,
    iid,
  });
  const missing = (field: string): Route => ({
    outcome: 'unreadable',
    note: `gitlab ${facts.object_kind}: payload field ${field} is not as GitLab documents it`,
  });

  switch (facts.object_kind) {
    case 'note': {
      if (!r.comment.enabled) break;
      // GitLab 16.11 on also sends edits (`update`); a note is for switchboard when made.
      if (a.action && a.action !== 'create') break;
      if (a.note === null) return missing('object_attributes.note');
      if (!addressesSwitchboard(a.note, r.comment)) break;
      const on = facts.noteable;
      const mr = a.noteable_type === 'MergeRequest';
      const ref = on ? `${mr ? '!' : '#'}${on.iid}` : (a.noteable_type ?? 'a commit');
      const firstLine = a.note_first_line ?? '';
      return {
        outcome: 'matched',
        draft: {
          ...base('comment'),
          kind: 'gitlab.note.create',
          title: `comment by @${facts.actor?.login ?? 'ghost'} on ${ref} ${where}: ${firstLine}`,
          body: on ? `${a.note}\n\n(on ${mr ? 'MR' : 'issue'} ${ref}: ${on.title})` : a.note,
          url: a.url,
          target:
            on && (mr || a.noteable_type === 'Issue')
              ? target(mr ? 'merge_requests' : 'issues', on.iid)
              : null,
        },
      };
    }
    case 'merge_request': {
      if (a.iid === null || a.title === null) return missing('object_attributes.iid');
      if (a.action === 'open' && r.merge_request_opened.enabled && !a.draft) {
        return {
          outcome: 'matched',
          draft: {
            ...base('merge_request_opened'),
            title: `MR !${a.iid} opened ${where}: ${a.title}`,
            body: a.description,
            url: a.url,
            target: target('merge_requests', a.iid),
          },
        };
      }
      if (r.reviewer_added.enabled && facts.reviewers_added.length > 0) {
        const wanted = r.reviewer_added.reviewers;
        const reviewer = facts.reviewers_added.find(
          (login) => wanted.length === 0 || wanted.some((w) => sameLogin(w, login)),
        );
        if (!reviewer) break;
        return {
          outcome: 'matched',
          draft: {
            ...base('reviewer_added'),
            title: `review requested from @${reviewer} on MR !${a.iid} ${where}: ${a.title}`,
            body: a.description,
            url: a.url,
            target: target('merge_requests', a.iid),
          },
        };
      }
      break;
    }
    case 'pipeline': {
      if (!r.pipeline_failed.enabled || a.status !== 'failed') break;
      const id = a.id ?? a.iid;
      if (id === null) return missing('object_attributes.id');
      return {
        outcome: 'matched',
        draft: {
          ...base('pipeline_failed'),
          title: `pipeline #${id} failed on ${a.ref ?? a.sha?.slice(0, 8) ?? 'a commit'} ${where}`,
          body: [
            `status: failed`,
            `ref: ${a.ref ?? '(none)'}`,
            `commit: ${a.sha ?? '(unknown)'}`,
          ].join('\n'),
          url: a.url ?? `${project.web_url}/-/pipelines/${id}`,
          target: null,
        },
      };
    }
    case 'issue': {
      if (!r.issue_labeled.enabled) break;
      if (a.iid === null || a.title === null) return missing('object_attributes.iid');
      const wanted = r.issue_labeled.label.toLowerCase();
      const label = facts.labels_added.find((name) => name.toLowerCase() === wanted);
      if (!label) break;
      return {
        outcome: 'matched',
        draft: {
          ...base('issue_labeled'),
          title: `issue #${a.iid} labelled ${label} ${where}: ${a.title}`,
          body: a.description,
          url: a.url,
          target: target('issues', a.iid),
        },
      };
    }
  }
  return { outcome: 'no_rule' };
}
