import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** A request switchboard will not make: the reason is safe to show whoever gave the URL. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

const ALLOW = 'SWITCHBOARD_OUTBOUND_ALLOW';

/**
 * SWITCHBOARD_OUTBOUND_ALLOW: comma-separated CIDRs (a bare address is one address), written
 * back in canonical form. Throws, naming the entry, on anything else.
 */
export function parseAllowList(text: string | undefined): string[] {
  if (text === undefined || text.trim() === '') return [];
  return text.split(',').map((entry) => {
    const trimmed = entry.trim();
    try {
      const [address, bits] = trimmed.includes('/')
        ? ipaddr.parseCIDR(trimmed)
        : [ipaddr.parse(trimmed), trimmed.includes(':') ? 128 : 32];
      // ipaddr also reads 127.1 and 0x7f.0.0.1; an operator's list is written plainly.
      const host = trimmed.split('/')[0]!;
      if (isIP(host) === 0) throw new Error('not plain');
      return `${address.toString()}/${bits}`;
    } catch {
      throw new Error(`'${trimmed}' is not an address or a CIDR, such as 127.0.0.1/32 or fd00::/8`);
    }
  });
}

/** What a special range is called in a refusal ("10.0.0.1 is a private address"). */
const RANGES: Record<string, string> = {
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address',
  private: 'a private address',
  uniqueLocal: 'a unique-local address',
  reserved: 'a reserved address',
};

/** `localhost` and its subdomains always name this machine (RFC 6761). */
const LOCALHOST = /(^|\.)localhost\.?$/i;

export interface OutboundPolicy {
  /** The allow list, canonical. */
  allow: readonly string[];
  /**
   * Why a connection to `address` (an IP address, as DNS answered or the URL wrote it) must not
   * be made, or null. Plain http goes only to allowed addresses; https also to public ones.
   */
  addressRefusal(address: string, protocol: 'http:' | 'https:'): string | null;
  /**
   * Why `url` cannot be sent to, as far as can be told without DNS (its scheme, credentials in
   * it, an address written in it), or null: the check when a URL is registered, and the first
   * check when it is used.
   */
  urlRefusal(url: string): string | null;
}

/**
 * The one rule for every request switchboard makes to a URL a user gave it: https to public
 * addresses (ipaddr.js's `unicast`: not loopback, private, link-local, unique-local, multicast,
 * unspecified, broadcast, carrier-grade NAT, reserved, nor an IPv4-mapped or -translated form of
 * one); anything else only inside a CIDR of SWITCHBOARD_OUTBOUND_ALLOW, over http or https.
 */
export function createOutboundPolicy(allowList: readonly string[]): OutboundPolicy {
  const allow = parseAllowList(allowList.join(','));
  const cidrs: Cidr[] = allow.map((cidr) => ipaddr.parseCIDR(cidr));
  const allowed = (address: Address) =>
    cidrs.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits));
  const unless = `unless ${ALLOW} allows it`;

  const addressRefusal = (text: string, protocol: 'http:' | 'https:'): string | null => {
    let address: Address;
    try {
      address = ipaddr.parse(text);
    } catch {
      return `${text} is not an address`;
    }
    // ::ffff:10.0.0.1 reaches 10.0.0.1: it is judged, and allowed, as that.
    if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress())
      address = address.toIPv4Address();
    if (allowed(address)) return null;
    const range = address.range();
    // ::a.b.c.d, the deprecated IPv4-compatible form, is no special range to ipaddr.js.
    const compatible =
      address instanceof ipaddr.IPv6 && address.parts.slice(0, 6).every((part) => part === 0);
    if (range !== 'unicast' || compatible) {
      const what = RANGES[range] ?? `not a public address (${range})`;
      return `is ${text}, ${what}: switchboard sends only to public addresses ${unless}`;
    }
    return protocol === 'http:'
      ? `must be https: plain http goes only to addresses ${ALLOW} allows`
      : null;
  };

  const urlRefusal = (text: string): string | null => {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return 'must be an http(s) URL';
    }
    const protocol = url.protocol;
    if (protocol !== 'http:' && protocol !== 'https:') return 'must be an http(s) URL';
    if (url.username || url.password) return 'must not hold a user name or password';
    // The WHATWG parser has already read 127.1, 2130706433 and 0x7f.0.0.1 as 127.0.0.1.
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0) return addressRefusal(host, protocol);
    if (LOCALHOST.test(host)) {
      const both = ['127.0.0.1', '::1'].every((address) => allowed(ipaddr.parse(address)));
      return both
        ? null
        : `names this machine (localhost): switchboard sends there only if ${ALLOW} allows 127.0.0.1 and ::1`;
    }
    if (protocol === 'http:' && cidrs.length === 0)
      return `must be https: plain http goes only to addresses ${ALLOW} allows, and it allows none`;
    return null;
  };

  return { allow, addressRefusal, urlRefusal };
}
