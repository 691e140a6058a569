import dns, { type LookupAddress } from 'node:dns';

/**
 * The system resolver of this process (`dns.lookup`, which every connection by name goes
 * through) answers `names` itself, as a DNS server of the test's would; other names resolve as
 * before; a function is asked at each lookup. Returns the function that puts the resolver back. A name can then point where a test
 * needs it — at a fake service on 127.0.0.1, or at an address inside — with no DNS server and no
 * network.
 */
export function resolveNames(names: Record<string, string[] | (() => string[])>): () => void {
  const original = dns.lookup;
  const patched = (hostname: string, options: unknown, callback?: unknown) => {
    const done = (typeof options === 'function' ? options : callback) as (
      error: Error | null,
      address: string | LookupAddress[],
      family?: number,
    ) => void;
    const given: { all?: boolean; family?: number | string } =
      typeof options === 'object' && options !== null
        ? options
        : typeof options === 'number'
          ? { family: options }
          : {};
    const entry = names[hostname.toLowerCase().replace(/\.$/, '')];
    const known = typeof entry === 'function' ? entry() : entry;
    if (!known) return (original as (...args: unknown[]) => void)(hostname, options, callback);
    const family = given.family === 'IPv6' ? 6 : given.family === 'IPv4' ? 4 : given.family;
    const addresses = known
      .map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
      .filter((entry) => !family || entry.family === family);
    process.nextTick(() => {
      if (addresses.length === 0) {
        done(
          Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }),
          '',
        );
      } else if (given.all) done(null, addresses);
      else done(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
  dns.lookup = patched as typeof dns.lookup;
  return () => {
    dns.lookup = original;
  };
}
