import type { Disposition } from '../contract/deliveries.js';
import type { NewTodo } from '../data/index.js';
import type { Facts, Provider, VerdictCommand, WriteBack } from './provider.js';

export interface Decision {
  disposition: Exclude<Disposition, 'duplicate' | 'verdict_refused'>;
  notes: string[];
  /** The rule that matched (also for a bot's delivery, which makes nothing). */
  rule: string | null;
  /** verdict only: the `/approve N` or `/deny N` comment to carry out. */
  verdict?: VerdictCommand;
  /** created and quarantined only: the todo, and what to write back once it exists. */
  todo?: {
    input: NewTodo;
    writeBacks: WriteBack[];
    /** Keyed by the delivery, or by what it is about (the provider's draft key). */
    keyedBy: 'delivery' | 'subject';
  };
}

/**
 * Route and trust, the steps every provider shares once its facts are read: what a delivery
 * should make — nothing (and why), a pending todo or a quarantined one, and the write-backs
 * that go with it — before anything is written. Pure: it runs again on stored facts for
 * `deliveries explain` and a source's rules dry run.
 */
export function decideDelivery(
  provider: Provider,
  delivery: {
    /** `github`, or the source's name. */
    source: string;
    /** The human who added the source (who a Standard Webhooks event names nobody else). */
    owner: string | null;
    deliveryId: string;
    facts: Facts;
  },
  rules: unknown,
  /** writeBack: whether write-backs can be sent; warning: why the defaults ruled, if they did. */
  options: { writeBack: boolean; warning?: string | null },
): Decision {
  const { facts } = delivery;
  const notes = options.warning ? [options.warning] : [];
  // A human answering an approval in the conversation its work came from: a verdict, not work.
  const verdict = provider.verdicts?.read(facts);
  if (verdict) return { disposition: 'verdict', notes, rule: null, verdict };
  const route = provider.route(facts, rules);
  if (route.outcome === 'no_rule') return { disposition: 'no_rule', notes, rule: null };
  if (route.outcome === 'unreadable') {
    return { disposition: 'unreadable', notes: [...notes, route.note], rule: null };
  }
  const { draft } = route;
  const trust = provider.trust(facts, draft, rules, delivery.owner);
  if (trust.outcome === 'unattributed') {
    return {
      disposition: 'unreadable',
      notes: [...notes, 'no sender to attribute the todo to'],
      rule: draft.rule,
    };
  }
  if (trust.outcome === 'bot') {
    return { disposition: 'bot_sender', notes: [...notes, trust.reason], rule: draft.rule };
  }
  const quarantined = trust.outcome === 'untrusted';
  if (quarantined) notes.push(trust.reason);

  let writeBacks: WriteBack[] = [];
  if (options.writeBack && provider.reactions) {
    const reactions = provider.reactions(facts, draft);
    // "Someone is on it" is for work waiting for an agent, not for a quarantined todo nobody
    // has vouched for yet.
    if (!quarantined) writeBacks = reactions.writeBacks;
    if (reactions.note) notes.push(reactions.note);
  }
  const { attributedTo } = trust;
  return {
    disposition: quarantined ? 'quarantined' : 'created',
    notes,
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
        key: `${delivery.source}:${draft.key ?? delivery.deliveryId}:${draft.rule}`.slice(0, 200),
        source: provider.kind,
        attributed_to: attributedTo,
        quarantined,
        quarantine_reason: quarantined ? trust.reason : undefined,
        meta: provider.todoMeta({
          source: delivery.source,
          deliveryId: delivery.deliveryId,
          facts,
          draft,
          attributedTo,
        }),
      },
      writeBacks,
      keyedBy: draft.key === undefined ? 'delivery' : 'subject',
    },
  };
}
