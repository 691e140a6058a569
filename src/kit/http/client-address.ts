import type { Request } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';

/**
 * The client's address as limits key it: `req.ip`, which Express takes from X-Forwarded-For only
 * as far as `trust proxy` (SWITCHBOARD_TRUST_PROXY) allows, so that behind a proxy each client is
 * counted apart and nobody can name another's address. An IPv6 client is its /56 (one holder's
 * usual allocation: a new address per request is not a new client); an IPv4-mapped one, its IPv4.
 */
export function clientAddressOf(req: Request): string {
  return ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}
