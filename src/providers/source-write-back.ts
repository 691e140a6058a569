import type { Provider, ProviderClients, SourceApi, WriteBackRequest } from './provider.js';
import { sourceDestinationOf } from './source-todo-meta.js';

/**
 * Replies and summaries back to a source's issue or merge request: where its todo's meta says,
 * signed with a plain line (not every provider renders HTML), posted by `send` with the API
 * token the source was given.
 */
export function sourceWriteBack(
  send: (request: WriteBackRequest, clients: ProviderClients, api: SourceApi) => Promise<void>,
): NonNullable<Provider['writeBack']> {
  return {
    destinationOf: sourceDestinationOf,
    footer: (line) => `\n\n— ${line}`,
    send: (request, clients, api) => {
      // The outbox opens the source for its token before it sends; without one, nothing is queued.
      if (!api) throw new Error('a source write-back needs the source’s API URL and token');
      return send(request, clients, api);
    },
  };
}
