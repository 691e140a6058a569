import { evaluateTrust, type Origin } from './evaluate-trust.js';
import type { GitHubTodoMeta } from './github-todo-meta.js';
import type { LoadedConfig } from './load-repository-config.js';
import type { DeliveryFacts } from './read-delivery-facts.js';
import { readVerdictCommand } from './read-verdict-command.js';
import type { DeliveryDecision } from './record-delivery.js';
import { routeEvent } from './route-event.js';

/**
 * Route and trust: what a delivery should make — nothing (and why), a pending todo or a
 * quarantined one, and the write-backs that go with it — before anything is written.
 */
export function decideDelivery(
  facts: DeliveryFacts,
  payload: unknown,
  { config, warning }: LoadedConfig,
  writeBack: boolean,
): DeliveryDecision {
  const notes = warning ? [warning] : [];
  // A human answering an approval in the conversation its work came from: a verdict, not work.
  const verdict = readVerdictCommand(facts.event, payload);
  if (verdict) return { facts, disposition: 'verdict', notes, verdict };
  const route = routeEvent(facts, payload, config);
  if (route.outcome === 'no_rule') return { facts, disposition: 'no_rule', notes };
  if (route.outcome === 'unreadable') {
    return { facts, disposition: 'unreadable', notes: [...notes, route.note] };
  }
  const { draft } = route;
  const { sender, repository } = facts;
  if (!sender || !repository) {
    return {
      facts,
      disposition: 'unreadable',
      notes: [...notes, 'no sender to attribute the todo to'],
    };
  }
  const trust = evaluateTrust(sender, draft.origin, config.trust);
  if (trust === 'bot') {
    return {
      facts,
      disposition: 'bot_sender',
      notes: [...notes, `${sender.login} is not an allowlisted bot`],
    };
  }
  const quarantined = trust === 'untrusted';
  const quarantineReason = quarantined
    ? `${sender.login} (${describeOrigin(draft.origin)}) is not trusted`
    : null;
  if (quarantineReason) notes.push(quarantineReason);

  const meta: GitHubTodoMeta = {
    delivery_id: facts.deliveryId,
    event: facts.event,
    action: facts.action,
    rule: draft.rule,
    owner: repository.owner,
    repo: repository.name,
    installation_id: facts.installationId,
    issue_number: draft.issueNumber,
    comment_id: draft.commentId,
    sender: sender.login,
  };
  // 👀 says "switchboard took this on": only for work that is waiting for an agent, not for a
  // quarantined todo nobody has vouched for yet.
  const writeBacks =
    writeBack &&
    !quarantined &&
    draft.react &&
    facts.installationId !== null &&
    draft.issueNumber !== null
      ? [
          {
            kind:
              draft.react === 'issue' ? ('issue_reaction' as const) : ('comment_reaction' as const),
            installationId: facts.installationId,
            owner: repository.owner,
            repo: repository.name,
            issueNumber: draft.issueNumber,
            commentId: draft.react === 'comment' ? draft.commentId : null,
            body: 'eyes',
          },
        ]
      : [];
  if (writeBack && draft.react && facts.installationId === null) {
    notes.push('no installation in the delivery: nothing is written back');
  }
  return {
    facts,
    disposition: quarantined ? 'quarantined' : 'created',
    notes,
    todo: {
      input: {
        queue: draft.queue,
        kind: draft.kind,
        title: draft.title,
        body: draft.body,
        url: draft.url,
        assignee: draft.assignee,
        // One todo per delivery and rule, even if the delivery row were ever lost or pruned.
        key: `github:${facts.deliveryId}:${draft.rule}`,
        source: 'github',
        attributed_to: sender.login,
        quarantined,
        quarantine_reason: quarantineReason ?? undefined,
        meta: { github: meta },
      },
      writeBacks,
    },
  };
}

function describeOrigin(origin: Origin): string {
  return 'association' in origin
    ? `author association ${origin.association}`
    : origin.sameRepository
      ? 'code from this repository'
      : 'code from a fork';
}
