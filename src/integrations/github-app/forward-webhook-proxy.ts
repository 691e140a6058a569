import { SmeeClient } from 'smee-client';
import type { Logger } from '../../platform/logger.js';

export interface WebhookProxy {
  close(): Promise<void>;
}

/**
 * WEBHOOK_PROXY_URL, as Probot has it: a machine GitHub cannot reach (a laptop) gives GitHub a
 * smee.io channel as the App's webhook URL, and listens to the channel itself — smee-client
 * holds a server-sent-events stream open to it and posts each delivery, its headers and body, to
 * this server's own /api/github/webhooks, where it is verified like any other. The channel is
 * configured by the operator, like GHE_HOST, so it is reached directly (not through
 * src/platform/egress's policy, which is for the URLs users give).
 */
export function forwardWebhookProxy(options: {
  /** The channel: https://smee.io/… */
  source: string;
  /** This server's own webhook endpoint, on the address it listens on. */
  target: string;
  log: Logger;
}): WebhookProxy {
  const { log } = options;
  const client = new SmeeClient({
    source: options.source,
    target: options.target,
    logger: {
      // "POST … - 200" for each delivery, and the connection's comings and goings.
      info: (message: unknown) => log.debug({ webhook_proxy: options.source }, String(message)),
      error: (message: unknown) =>
        log.warn(
          { webhook_proxy: options.source },
          `webhook proxy: ${message instanceof Error ? message.message : String(message)}`,
        ),
    },
  });
  client.start().then(
    () =>
      log.info(
        { webhook_proxy: options.source },
        'forwarding GitHub deliveries from the webhook proxy',
      ),
    (error: unknown) =>
      log.warn(
        {
          webhook_proxy: options.source,
          error: error instanceof Error ? error.message : String(error),
        },
        'could not connect to the webhook proxy (WEBHOOK_PROXY_URL); GitHub deliveries sent there will not arrive',
      ),
  );
  return { close: () => client.stop() };
}
