import type postgres from 'postgres';
import { PROVIDER_KINDS } from '../contract/todo.js';
import { openSource } from '../data/sources/source-store.js';
import type { SecretBox } from '../platform/secrets/secret-box.js';
import type { OutboxSenders } from '../outbox/create-outbox-sender.js';
import { FinalSendError } from '../outbox/final-send-error.js';
import { providerFor } from '../providers/by-kind/provider-for.js';
import type { ProviderClients, SourceApi } from '../providers/provider.js';

/**
 * The outbox's sender for each provider that takes write-backs: the App's through its
 * installation's Octokit, a source's through egress with the token the registry opens for it.
 */
export function writeBackSenders(options: {
  sql: postgres.Sql;
  clients: ProviderClients;
  /** Opens the sources' tokens; null: no server key, so sources' write-backs are not claimed. */
  box: SecretBox | null;
}): OutboxSenders {
  const { sql, clients, box } = options;

  /** A source's API and token, as the registry has them now. */
  async function apiOf(name: string): Promise<SourceApi> {
    const source = box ? await openSource(sql, box, name) : null;
    if (!source) throw new FinalSendError(`source ${name} was removed`);
    if (!source.apiToken || !source.api_url)
      throw new FinalSendError(`source ${name} has no API token any more`);
    return { url: source.api_url, token: source.apiToken };
  }

  const senders: OutboxSenders = {};
  for (const kind of PROVIDER_KINDS) {
    const writeBack = providerFor(kind).writeBack;
    if (!writeBack) continue;
    senders[kind] = async ({ source, write_back, target, body }, signal) => {
      const api = source === 'github' ? null : await apiOf(source);
      await writeBack.send({ write_back, target, body, signal }, clients, api);
    };
  }
  return senders;
}
