import type postgres from 'postgres';
import { neutraliseLine } from '../contract/neutralise-text.js';
import type { DeliveryExplanation } from '../contract/deliveries.js';
import { providerOfKind } from '../providers/by-kind/provider-for.js';
import { decideDelivery } from '../providers/decide-delivery.js';
import type { Facts, ProviderClients } from '../providers/provider.js';
import { getSource } from '../data/sources/source-store.js';
import { sourceRules } from '../providers/by-kind/source-rules.js';
import type { DeliveryRecord } from '../data/deliveries/read-deliveries.js';

export type Explanation = DeliveryExplanation<DeliveryRecord>;

type Explained = Pick<Explanation, 'would' | 'rules'>;

/**
 * A dry run: today's rules on the facts the delivery was recorded with — the same steps the
 * intake takes (its rules, then trust: decideDelivery), with nothing written and nothing sent.
 * A source's rules are its saved ones now; GitHub's are the repository's file, read through the
 * App within `configTimeoutMs` as the intake reads it.
 */
export async function explainDelivery(
  sql: postgres.Sql,
  delivery: DeliveryRecord,
  options: { clients: ProviderClients; configTimeoutMs: number },
): Promise<Explanation> {
  const was = { disposition: delivery.disposition, todo_id: delivery.todo_id, note: delivery.note };
  const explained = await explain(sql, delivery, options);
  if (explained.would && delivery.disposition === 'duplicate') {
    explained.would.note = [
      'this record is a receipt for a redelivery or a replay, which makes nothing; this is what the rules make of its facts',
      explained.would.note,
    ]
      .filter(Boolean)
      .join('; ');
  }
  return { delivery, was, ...explained };
}

async function explain(
  sql: postgres.Sql,
  delivery: DeliveryRecord,
  options: { clients: ProviderClients; configTimeoutMs: number },
): Promise<Explained> {
  const provider = providerOfKind(delivery.kind);
  const facts = delivery.facts as Facts | null;
  if (!provider || !facts) {
    return {
      would: null,
      rules: {
        from: provider?.repositoryRules ? 'defaults' : 'source',
        note: 'recorded before deliveries kept their facts: nothing to run the rules on',
      },
    };
  }

  let rules: unknown;
  let owner: string | null = null;
  let said: Explained['rules'];
  const repository = provider.repositoryRules;
  const columns = provider.columns(facts);
  if (repository) {
    // As the intake does: only an event a rule could want is worth reading the file for.
    rules = provider.rules.defaults('');
    if (!repository.mayMatch(facts)) {
      said = { from: 'defaults', note: 'no rule, default or configured, can match this event' };
    } else if (!options.clients.github) {
      said = {
        from: 'defaults',
        note: "no GitHub App credentials on this server: the defaults, as for a delivery now (a repository's .github/switchboard.yml cannot be read)",
      };
    } else if (!columns.subject || columns.installationId === null) {
      said = {
        from: 'defaults',
        note: 'the delivery names no repository and installation: the defaults',
      };
    } else {
      const read = await repository.read(options.clients, facts, options.configTimeoutMs);
      rules = read.rules;
      said = read.warning
        ? { from: 'defaults', note: read.warning }
        : {
            from: 'repository',
            note: `${delivery.subject}'s .github/switchboard.yml over the defaults, read from GitHub now (the defaults alone where it has none)`,
          };
    }
  } else {
    const found = await getSource(sql, delivery.source);
    if (!found) {
      return {
        would: null,
        rules: {
          from: 'source',
          note: `source ${delivery.source} was removed: it has no rules now`,
        },
      };
    }
    rules = sourceRules({ ...found.source, rules: found.rules });
    owner = found.source.owner;
    said = { from: 'source', note: `source ${delivery.source}'s rules, as saved now` };
  }

  const decision = decideDelivery(
    provider,
    { source: delivery.source, owner, deliveryId: delivery.delivery_id, facts },
    rules,
    { writeBack: provider.reactions !== undefined && options.clients.github !== null },
  );
  const input = decision.todo?.input;
  return {
    rules: said,
    would: {
      disposition: decision.disposition,
      rule: decision.rule,
      queue: input?.queue ?? null,
      kind: input?.kind ?? null,
      title: input ? neutraliseLine(input.title) : null,
      assignee: input?.assignee ?? null,
      attributed_to: input?.attributed_to ?? null,
      write_backs: decision.todo?.writeBacks.map((writeBack) => writeBack.what) ?? [],
      verdict: decision.verdict
        ? { approval_id: decision.verdict.approvalId, verdict: decision.verdict.verdict }
        : null,
      note:
        [
          ...decision.notes,
          ...(decision.verdict
            ? ['whether its author may decide that approval is checked only when it is carried out']
            : []),
        ].join('; ') || null,
    },
  };
}
