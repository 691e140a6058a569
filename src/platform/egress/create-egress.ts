import dns, { type LookupAddress } from 'node:dns';
import type { IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, type RequestOptions } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import { Agent, buildConnector, request } from 'undici';
import { createOutboundPolicy, OutboundRefused, type OutboundPolicy } from './egress-policy.js';

/** The most of an answer's body that is read; the rest is not (a user's server may send gigabytes). */
export const MAX_ANSWER_BYTES = 64 * 1024;

export interface OutboundOptions {
  /** SWITCHBOARD_OUTBOUND_ALLOW, parsed: CIDRs that may be reached though not public. */
  allow: readonly string[];
  /** Tests: the certificates to trust instead of Node's (a fake service's own). */
  ca?: string | Buffer | undefined;
}

export interface OutboundRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /**
   * Headers that carry a credential, and the origin they were configured for: the request is
   * refused, with nothing sent, unless it goes to that origin.
   */
  credential?: { origin: string; headers: Record<string, string> };
  signal?: AbortSignal;
}

/** An answer, whatever its status: a 3xx is one too, never followed. */
export interface OutboundAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** At most {@link MAX_ANSWER_BYTES} of the body, as UTF-8. */
  body: string;
}

/**
 * Every request switchboard makes to a URL a user gave it (outbound webhooks, sources' APIs, Web
 * Push). Refuses what {@link OutboundPolicy} refuses — before DNS where the URL writes an
 * address, and after it on every connection, with every address the name resolved to checked and
 * the connection made to those very addresses (one lookup: a name cannot resolve to a public
 * address for the check and to an inside one for the connection). Follows no redirect.
 */
export interface Outbound {
  policy: OutboundPolicy;
  /** One request; throws {@link OutboundRefused} for what is not sent, else what the network threw. */
  request(url: string, init?: OutboundRequest): Promise<OutboundAnswer>;
  /** The same checks for a library that takes a Node `https.Agent` (web-push). */
  httpsAgent: HttpsAgent;
  close(): Promise<void>;
}

export function createOutbound({ allow, ca }: OutboundOptions): Outbound {
  const policy = createOutboundPolicy(allow);

  /** The system resolver (looked up at each call), its every answer checked. */
  const checkedLookup =
    (protocol: 'http:' | 'https:'): LookupFunction =>
    (hostname, options, callback) => {
      dns.lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
        if (error) return callback(error, '', 0);
        if (addresses.length === 0) {
          const none = Object.assign(new Error(`no address for ${hostname}`), {
            code: 'ENOTFOUND',
          });
          return callback(none, '', 0);
        }
        const refused = addresses
          .map((entry) => policy.addressRefusal(entry.address, protocol))
          .find((reason) => reason !== null);
        if (refused) return callback(new OutboundRefused(nameRefused(hostname, refused)), '', 0);
        if (options.all) return callback(null, addresses);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      });
    };

  /** An address written in the URL is connected to without a lookup: it is checked here. */
  const literalRefusal = (host: string, protocol: 'http:' | 'https:') => {
    const address = host.replace(/^\[|\]$/g, '');
    if (isIP(address) === 0) return null;
    const refused = policy.addressRefusal(address, protocol);
    return refused && new OutboundRefused(`the URL ${refused}`);
  };

  const tls = ca === undefined ? {} : { ca };
  const connectors = {
    'http:': buildConnector({ lookup: checkedLookup('http:') }),
    'https:': buildConnector({ lookup: checkedLookup('https:'), ...tls }),
  };
  const agent = new Agent({
    connect: (options, callback) => {
      const protocol = options.protocol === 'http:' ? 'http:' : 'https:';
      const refused = literalRefusal(options.hostname, protocol);
      if (refused) return callback(refused, null);
      connectors[protocol](options, callback);
    },
  });

  class CheckedHttpsAgent extends HttpsAgent {
    override createConnection(
      options: RequestOptions,
      callback?: (error: Error | null, stream: Duplex) => void,
    ): Duplex | null | undefined {
      const refused = literalRefusal(options.host ?? options.hostname ?? '', 'https:');
      if (!refused) return super.createConnection(options, callback);
      // Node's agent takes the socket, or the error, from the callback when nothing is returned.
      callback?.(refused, undefined as never);
      return undefined;
    }
  }
  const httpsAgent = new CheckedHttpsAgent({
    lookup: checkedLookup('https:'),
    keepAlive: true,
    ...tls,
  });

  return {
    policy,
    async request(url, init = {}) {
      const refused = policy.urlRefusal(url);
      if (refused) throw new OutboundRefused(`the URL ${refused}`);
      const target = new URL(url);
      const { credential } = init;
      if (credential && new URL(credential.origin).origin !== target.origin) {
        throw new OutboundRefused(
          `a credential for ${new URL(credential.origin).origin} is not sent to ${target.origin}`,
        );
      }
      const answer = await request(target, {
        dispatcher: agent,
        method: init.method ?? 'GET',
        headers: { ...init.headers, ...credential?.headers },
        body: init.body,
        signal: init.signal,
      });
      return {
        status: answer.statusCode,
        headers: answer.headers,
        body: await readAtMost(answer.body, MAX_ANSWER_BYTES),
      };
    },
    httpsAgent,
    async close() {
      httpsAgent.destroy();
      await agent.close();
    },
  };
}

/** "inside.example resolves to 10.0.0.1, a private address: …" */
function nameRefused(hostname: string, refused: string): string {
  return refused.startsWith('is ')
    ? `${hostname} resolves to ${refused.slice(3)}`
    : `${hostname} ${refused}`;
}

async function readAtMost(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk.subarray(0, limit - size));
    size += chunk.length;
    // Leaving the loop destroys the body: what is left is never read.
    if (size >= limit) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** True when the request was refused by the policy (anywhere in the error's causes). */
export function isOutboundRefused(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause)
    if (cause instanceof OutboundRefused) return true;
  return false;
}

/**
 * How a failed request may be named to whoever gave its URL: `timeout`, or `unreachable` —
 * a refused address reads as `unreachable` too, as a name that does not resolve does, so that an
 * outcome in a todo's history tells nobody what is inside the server's network. (The server's
 * log has the refusal's reason.)
 */
export function failureOf(error: unknown): 'timeout' | 'unreachable' {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause.name === 'TimeoutError') return 'timeout';
    const code = (cause as { code?: unknown }).code;
    if (
      typeof code === 'string' &&
      /^(UND_ERR_(CONNECT|HEADERS|BODY)_TIMEOUT|ETIMEDOUT)$/.test(code)
    )
      return 'timeout';
  }
  return 'unreachable';
}
