import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { z } from 'zod';
import { addressesSwitchboard } from '../addresses-switchboard.js';
import { FinalSendError } from '../../outbox/final-send-error.js';
import { factFirstLine, factLine, factText, factValue } from '../fact-text.js';
import { postToSourceApi } from '../post-to-source-api.js';
import { header, type Provider, type Route } from '../provider.js';
import { sameLogin } from '../same-login.js';
import type { SourceFacts } from '../source-facts.js';
import { sourceProvider } from '../source-provider.js';
import { linearRules, type LinearRules } from './linear-rules.js';

/**
 * Linear, verified by its own SDK's webhook helper (`@linear/sdk/webhooks`, one small file that
 * needs only node:crypto): `Linear-Signature` is the hex HMAC-SHA256 of the body, compared in
 * constant time, and the body's own `webhookTimestamp` (signed with it) must be within 60 s of
 * now. `Linear-Delivery` is the delivery's id; the actor's `type` is `user` for a human (an
 * integration or OAuth app is a bot). A user is named by their email (else their id). Replies
 * go back through GraphQL's `commentCreate`.
 */
export const linearProvider: Provider<LinearRules> = sourceProvider({
  kind: 'linear',
  name: 'Linear',
  requiredHeaders: [['Linear-Event'], ['Linear-Delivery']],
  verify(raw, headers, secrets) {
    const signature = header(headers, 'linear-signature');
    if (signature === undefined) return { ok: false, reason: 'no Linear-Signature header' };
    const reason = "the signature does not match the body under this source's secret";
    for (const secret of secrets) {
      try {
        if (new LinearWebhookClient(secret).verify(raw, signature)) return { ok: true };
      } catch (error) {
        const message = error instanceof Error ? error.message : '';
        if (/timestamp/i.test(message)) {
          // Only once the signature matched does the helper read the timestamp.
          return {
            ok: false,
            reason: /missing/i.test(message)
              ? 'the body has no webhookTimestamp'
              : 'webhookTimestamp is more than 60 seconds from now',
          };
        }
        // A signature that matched over a body that is not JSON: not Linear's.
        if (error instanceof SyntaxError) {
          return { ok: false, reason: 'the body is not valid JSON', malformed: true };
        }
      }
    }
    return { ok: false, reason };
  },
  deliveryId: (headers) => header(headers, 'linear-delivery') ?? null,
  readFacts: (headers, payload) => readLinearFacts(header(headers, 'linear-event'), payload),
  rules: linearRules,
  route: (facts, rules) => routeLinear(facts as LinearFacts, rules),
  send: async (request, clients, api) => {
    const text = await postToSourceApi(clients.outbound, {
      kind: 'linear',
      api,
      path: '/graphql',
      credential: { authorization: api.token },
      json: {
        query:
          'mutation CommentCreate($input: CommentCreateInput!) { commentCreate(input: $input) { success } }',
        variables: { input: { issueId: request.target.issue_id, body: request.body } },
      },
      signal: request.signal,
    });
    // GraphQL answers 200 with its errors in the body.
    const answer = JSON.parse(text) as {
      data?: { commentCreate?: { success?: boolean } };
      errors?: { message?: string }[];
    };
    if (!answer.data?.commentCreate?.success) {
      throw new FinalSendError(
        `linear refused the comment: ${answer.errors?.[0]?.message?.slice(0, 200) ?? 'no success'}`,
      );
    }
  },
});

const Str = z.string();
const Person = z
  .object({
    id: Str.max(100),
    name: Str.max(255).nullish(),
    email: Str.max(255).nullish(),
    type: Str.max(50).nullish(),
  })
  .nullable()
  .catch(null);
const Label = z.object({ id: Str.max(100), name: Str.max(255) });
const Data = z
  .object({
    id: Str.max(100),
    identifier: Str.max(50).nullish(),
    title: Str.nullish(),
    description: Str.nullish(),
    body: Str.nullish(),
    url: Str.max(2048).nullish(),
    assigneeId: Str.max(100).nullish(),
    assignee: Person,
    labels: z.array(Label).catch([]),
    labelIds: z.array(Str.max(100)).catch([]),
    team: z
      .object({ key: Str.max(50), name: Str.max(255).nullish() })
      .nullish()
      .catch(null),
    issueId: Str.max(100).nullish(),
    issue: z
      .object({ id: Str.max(100), title: Str, identifier: Str.max(50).nullish() })
      .nullish()
      .catch(null),
  })
  .nullable()
  .catch(null);
const UpdatedFrom = z
  .object({
    assigneeId: Str.max(100).nullish(),
    labelIds: z.array(Str.max(100)).nullish(),
  })
  .nullable()
  .catch(null);

interface LinearFacts extends SourceFacts {
  type: string | null;
  url: string | null;
  data: {
    id: string;
    identifier: string | null;
    title: string | null;
    body: string | null;
    first_line: string | null;
    url: string | null;
    assignee: { name: string | null; email: string | null } | null;
    labels: string[];
    labels_added: string[];
    assigned: boolean;
    issue: { id: string; title: string; identifier: string | null } | null;
    issue_id: string | null;
  } | null;
}

function readLinearFacts(event: string | undefined, payload: Record<string, unknown>): LinearFacts {
  const type = typeof payload.type === 'string' ? factValue(payload.type).slice(0, 50) : null;
  const action = typeof payload.action === 'string' ? factValue(payload.action).slice(0, 50) : null;
  const actor = Person.parse(payload.actor ?? null);
  const data = Data.parse(payload.data ?? null);
  const from = UpdatedFrom.parse(payload.updatedFrom ?? null);
  const added = (() => {
    if (!data) return [];
    if (action === 'create') return data.labels.map((label) => label.name);
    // Linear says what changed by the previous values: a label is added when its id was not there.
    const before = from?.labelIds;
    if (!before) return [];
    return data.labels.filter((label) => !before.includes(label.id)).map((label) => label.name);
  })();
  const assigned =
    !!data?.assigneeId &&
    (action === 'create' ||
      (from !== null && from.assigneeId !== undefined && from.assigneeId !== data.assigneeId));
  return {
    event: factValue(event ?? type ?? 'unknown').slice(0, 100),
    action,
    subject: data?.team ? factValue(data.team.key) : null,
    actor: actor
      ? {
          login: factValue(actor.email ?? actor.id),
          // Linear's actor types: `user`, or an integration, an OAuth client, an agent…
          bot: actor.type !== 'user',
        }
      : null,
    type,
    url: typeof payload.url === 'string' ? factValue(payload.url) : null,
    data: data && {
      id: factValue(data.id),
      identifier: data.identifier ?? null,
      title: data.title == null ? null : factLine(data.title),
      body:
        data.description != null
          ? factText(data.description)
          : data.body != null
            ? factText(data.body)
            : null,
      first_line: data.body != null ? factFirstLine(data.body) : null,
      url: data.url == null ? null : factValue(data.url),
      assignee: data.assignee
        ? { name: data.assignee.name ?? null, email: data.assignee.email ?? null }
        : null,
      labels: data.labels.slice(0, 100).map((label) => factValue(label.name)),
      labels_added: added.slice(0, 100).map(factValue),
      assigned,
      issue: data.issue
        ? {
            id: factValue(data.issue.id),
            title: factLine(data.issue.title),
            identifier: data.issue.identifier ?? null,
          }
        : null,
      issue_id: data.issueId ?? null,
    },
  };
}

function routeLinear(facts: LinearFacts, { rules: r }: LinearRules): Route {
  const data = facts.data;
  if (!data || facts.action === 'remove') return { outcome: 'no_rule' };
  const where = facts.subject ? `in ${facts.subject}` : 'in Linear';
  const base = (name: keyof LinearRules['rules']) => ({
    rule: name,
    queue: r[name].queue,
    assignee: r[name].assignee,
    kind: `linear.${facts.type ?? 'event'}.${facts.action ?? 'none'}`
      .toLowerCase()
      .replace(/[^a-z0-9_.]/g, '_'),
  });
  const ref = data.identifier ?? data.id;

  if (facts.type === 'Issue') {
    if (data.title === null) {
      return {
        outcome: 'unreadable',
        note: 'linear Issue: payload field data.title is not as Linear documents it',
      };
    }
    if (r.issue_assigned.enabled && data.assigned && data.assignee) {
      const { name, email } = data.assignee;
      const wanted = r.issue_assigned.assignees.some(
        (who) => (email && sameLogin(who, email)) || (name && sameLogin(who, name)),
      );
      if (wanted) {
        return {
          outcome: 'matched',
          draft: {
            ...base('issue_assigned'),
            title: `issue ${ref} assigned to ${name ?? email} ${where}: ${data.title}`,
            body: data.body,
            url: data.url ?? facts.url,
            target: { issue_id: data.id },
          },
        };
      }
    }
    if (r.issue_labeled.enabled) {
      const wanted = r.issue_labeled.label.toLowerCase();
      const label = data.labels_added.find((name) => name.toLowerCase() === wanted);
      if (label) {
        return {
          outcome: 'matched',
          draft: {
            ...base('issue_labeled'),
            title: `issue ${ref} labelled ${label} ${where}: ${data.title}`,
            body: data.body,
            url: data.url ?? facts.url,
            target: { issue_id: data.id },
          },
        };
      }
    }
    return { outcome: 'no_rule' };
  }
  if (facts.type === 'Comment' && facts.action === 'create' && r.comment.enabled) {
    if (data.body === null) {
      return {
        outcome: 'unreadable',
        note: 'linear Comment: payload field data.body is not as Linear documents it',
      };
    }
    if (!addressesSwitchboard(data.body, { mention: r.comment.mention }))
      return { outcome: 'no_rule' };
    const issueId = data.issue?.id ?? data.issue_id;
    const on = data.issue?.identifier ?? 'an issue';
    const firstLine = data.first_line ?? '';
    return {
      outcome: 'matched',
      draft: {
        ...base('comment'),
        title: `comment by ${facts.actor?.login ?? 'someone'} on ${on} ${where}: ${firstLine}`,
        body: data.issue ? `${data.body}\n\n(on issue ${on}: ${data.issue.title})` : data.body,
        url: facts.url ?? data.url,
        target: issueId ? { issue_id: issueId } : null,
      },
    };
  }
  return { outcome: 'no_rule' };
}
