import type { NewTodo } from '../ledger/index.js';
import type { OpenedSource } from './source-store.js';
import type { SourceFacts, SourceProvider } from './source-provider.js';
import type { SourceRules } from './source-rules.js';

export type SourceDisposition = 'created' | 'quarantined' | 'no_rule' | 'bot_sender' | 'unreadable';

export interface SourceDecision {
  disposition: SourceDisposition;
  notes: string[];
  /** The rule that matched (also for a bot's delivery, which makes nothing). */
  rule: string | null;
  /** The todo to make; a quarantined one carries why (its `quarantine_reason`). */
  todo?: { input: NewTodo };
}

/** What a todo from a source keeps in `meta.source`: where it came from and where replies go. */
export interface SourceTodoMeta {
  name: string;
  kind: string;
  delivery_id: string;
  event: string;
  action: string | null;
  rule: string;
  actor: string;
  target: Record<string, unknown> | null;
}

const includes = (logins: string[], login: string) =>
  logins.some((candidate) => candidate.toLowerCase() === login.toLowerCase());

/**
 * The steps every source shares after its provider read the facts: apply the rules, then weigh
 * trust — an allowlist, since only GitHub says how an author relates to a repository. A bot makes
 * nothing unless it is on `trust.bots`; a human makes a pending todo when they, and the author of
 * the text the todo carries where the payload names one, are on `trust.logins`, else a
 * quarantined one. A Standard Webhooks delivery that names nobody is the owner's own: trusted.
 * Pure: it runs again, on stored facts, for a rules dry run.
 */
export function decideSourceDelivery(
  source: Pick<OpenedSource, 'name' | 'kind' | 'owner'>,
  provider: SourceProvider,
  deliveryId: string,
  facts: SourceFacts,
  rules: SourceRules,
): SourceDecision {
  const route = provider.route(facts, rules);
  if (route.outcome === 'no_rule') return { disposition: 'no_rule', notes: [], rule: null };
  if (route.outcome === 'unreadable') {
    return { disposition: 'unreadable', notes: [route.note], rule: null };
  }
  const { draft } = route;
  const { trust } = rules;
  const actor = draft.actor !== undefined ? draft.actor : facts.actor;
  if (!actor && source.kind !== 'standard-webhooks') {
    return {
      disposition: 'unreadable',
      notes: ['no sender to attribute the todo to'],
      rule: draft.rule,
    };
  }
  let reason: string | null = null;
  if (actor?.bot) {
    if (!includes(trust.bots, actor.login)) {
      return {
        disposition: 'bot_sender',
        notes: [`${actor.login} is a bot not on this source's trust.bots`],
        rule: draft.rule,
      };
    }
  } else if (actor) {
    const untrusted = [actor.login, ...(facts.author ? [facts.author] : [])].find(
      (login) => !includes(trust.logins, login),
    );
    if (untrusted) {
      reason =
        untrusted === actor.login
          ? `${untrusted} is not on this source's trust.logins`
          : `${actor.login} acted on text by ${untrusted}, who is not on this source's trust.logins`;
    }
  }
  const quarantined = reason !== null;
  const attributedTo = actor?.login ?? source.owner;
  const meta: SourceTodoMeta = {
    name: source.name,
    kind: source.kind,
    delivery_id: deliveryId,
    event: facts.event,
    action: facts.action,
    rule: draft.rule,
    actor: attributedTo,
    target: draft.target,
  };
  return {
    disposition: quarantined ? 'quarantined' : 'created',
    notes: reason ? [reason] : [],
    rule: draft.rule,
    todo: {
      input: {
        queue: draft.queue,
        kind: draft.kind,
        title: draft.title,
        body: draft.body,
        url: draft.url,
        assignee: draft.assignee,
        // One todo per delivery and rule (or per object, where the provider says so), even if
        // the delivery row were ever lost or pruned.
        key: `${source.name}:${draft.key ?? deliveryId}:${draft.rule}`.slice(0, 200),
        source: source.kind,
        attributed_to: attributedTo,
        quarantined,
        quarantine_reason: quarantined && reason ? reason : undefined,
        meta: { source: meta },
      },
    },
  };
}
