import { isIP } from 'node:net';

/**
 * Where this server is, as its clients see it: the base of every URL it prints or sends, and the
 * names a request may be addressed to. Both come from configuration, never from a request: a
 * Host header is whatever its sender wrote (a DNS-rebinding page's own name, for one).
 */
export interface PublicAddress {
  /** SWITCHBOARD_PUBLIC_URL, else the address the server listens on (once it does). */
  url(): string;
  /** Why a request addressed to `host` (its Host header) is not answered; undefined: it is. */
  hostRefusal(host: string | undefined): string | undefined;
  /**
   * Whether a request that says it comes from `origin` may be answered: the public URL's origin
   * exactly (scheme included: the hop behind a TLS proxy is plain http), else `sent`, the origin
   * the request was sent to (its scheme and its Host, already found answerable).
   */
  allowsOrigin(origin: string, sent: string): boolean;
  /** Told once the server listens: its URL, and whether it is bound beyond loopback. */
  listening(url: string, beyondLoopback: boolean): void;
}

/** How many answerable Host headers are remembered: a stranger's many names are judged each time. */
const ALLOWED_KEPT = 64;

const HOST = /^(?:\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/i;

/**
 * Which Host a request may name, against DNS rebinding (a page on a name its attacker controls,
 * resolved to this server, is of the page's origin to the browser):
 * - the public URL's host (name and port), as a proxy passes it on;
 * - `localhost`, 127.0.0.0/8 and `[::1]`, on any port: a rebinding page cannot be of these
 *   names, and a container's published port is not the one bound inside it;
 * - when bound beyond loopback, any IP address: no page can rebind an address either, and a
 *   client that dialled one is one of this network's.
 * Any other name is refused, told to set SWITCHBOARD_PUBLIC_URL to the name it used.
 */
export function createPublicAddress(publicUrl: string | undefined): PublicAddress {
  const configured = publicUrl ? new URL(publicUrl) : undefined;
  const defaultPort = (protocol: string) => (protocol === 'https:' ? '443' : '80');
  let listeningUrl: string | undefined;
  let beyondLoopback = false;
  /** Hosts already found answerable (until the server says where it listens again). */
  const allowed = new Set<string>();

  const parse = (host: string) => {
    if (!HOST.test(host)) return undefined;
    try {
      const url = new URL(`${configured?.protocol ?? 'http:'}//${host}`);
      // A fully qualified name's trailing dot names the same host.
      return { hostname: url.hostname.replace(/\.$/, ''), port: url.port };
    } catch {
      return undefined;
    }
  };

  return {
    url() {
      if (configured) return publicUrl!;
      if (!listeningUrl) throw new Error('the server does not listen yet');
      return listeningUrl;
    },
    hostRefusal(host) {
      // Every request asks, and with a handful of names between them: each is judged once.
      if (host !== undefined && allowed.has(host)) return undefined;
      const refusal = judge(host);
      if (refusal === undefined && host !== undefined && allowed.size < ALLOWED_KEPT)
        allowed.add(host);
      return refusal;
    },
    allowsOrigin(origin, sent) {
      return origin.toLowerCase() === (configured?.origin ?? sent.toLowerCase());
    },
    listening(url, beyond) {
      listeningUrl = url;
      beyondLoopback = beyond;
      allowed.clear();
    },
  };

  function judge(host: string | undefined): string | undefined {
    const parsed = host ? parse(host) : undefined;
    if (parsed) {
      const { hostname, port } = parsed;
      if (
        configured &&
        hostname === configured.hostname &&
        (port || defaultPort(configured.protocol)) ===
          (configured.port || defaultPort(configured.protocol))
      )
        return undefined;
      if (isLoopbackName(hostname)) return undefined;
      if (beyondLoopback && isAddress(hostname)) return undefined;
    }
    const named = host ? `the host ${host.slice(0, 256)}` : 'a request without a Host';
    return configured
      ? `this server does not answer for ${named}: it is ${configured.origin} (SWITCHBOARD_PUBLIC_URL)`
      : `this server does not answer for ${named}: set SWITCHBOARD_PUBLIC_URL to the address its clients use (e.g. https://switchboard.example.com), or use its IP address or localhost`;
  }
}

function isLoopbackName(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname === '[::1]' ||
    (isIP(hostname) === 4 && hostname.startsWith('127.'))
  );
}

/** An IP address, but not the unspecified one (a browser's way to this machine, not an address). */
function isAddress(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '');
  return isIP(bare) !== 0 && bare !== '0.0.0.0' && bare !== '::';
}
