import { allowlistTrust } from './allowlist-trust.js';
import type { Provider, ProviderClients, SourceApi, WriteBackRequest } from './provider.js';
import { sourceColumns, type SourceFacts } from './source-facts.js';
import { sourceTodoMeta } from './source-todo-meta.js';
import { sourceWriteBack } from './source-write-back.js';

type Trusting = { trust: { logins: string[]; bots: string[] } };

/**
 * A kind of source (every provider but the GitHub App), with what they all share filled in: the
 * row's subject and actor from the facts, trust as an allowlist of the actor (and the author of
 * the text, where the payload names one), `meta.source`, and — given `send` — replies and
 * summaries back through the source's API.
 */
export function sourceProvider<Rules extends Trusting>(
  parts: Omit<Provider<Rules>, 'columns' | 'trust' | 'todoMeta' | 'writeBack'> &
    Partial<Pick<Provider<Rules>, 'trust'>> & {
      send?: (request: WriteBackRequest, clients: ProviderClients, api: SourceApi) => Promise<void>;
    },
): Provider<Rules> {
  const { send, ...provider } = parts;
  return {
    columns: sourceColumns,
    trust: (facts, _draft, rules) => {
      const { actor, author } = facts as SourceFacts;
      return allowlistTrust(actor, author, rules.trust, null);
    },
    todoMeta: (made) => sourceTodoMeta(parts.kind, made),
    ...(send && { writeBack: sourceWriteBack(send) }),
    ...provider,
  };
}
