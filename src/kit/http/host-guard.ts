import type { Request, RequestHandler, Response } from 'express';
import { sendError } from './http-error.js';
import type { PublicAddress } from './public-address.js';

/**
 * Where MCP clients connect: refusals there are JSON-RPC, as the rest of its answers. Matched in
 * any case, though routes match only their own spelling, so that no spelling passes unchecked.
 */
const MCP = /^\/mcp(?:\/|$)/i;
/** A request line's target in absolute form (RFC 9112 §3.2.2): its authority. */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i;

/**
 * Before any route: a request addressed to a host this server is not (a DNS-rebinding page's
 * name) is refused with 403, by its Host or by the authority of a request line in absolute form
 * (`GET http://evil.example/… HTTP/1.1`, whose authority wins over Host), and so is one to /mcp
 * from a page of another origin — the MCP spec's rule for `Origin`, which a browser always sends
 * with a cross-origin request. 403 is what the MCP conformance suite's `dns-rebinding-protection`
 * scenario expects. Nothing has run yet, so nothing has changed.
 */
export function hostGuard(address: PublicAddress): RequestHandler {
  return (req, res, next) => {
    const host = req.headers.host;
    const authority = ABSOLUTE_FORM.exec(req.url)?.[1];
    const refusal =
      address.hostRefusal(host) ??
      (authority === undefined ? undefined : address.hostRefusal(authority));
    if (refusal) return refuse(req, res, refusal);
    const origin = req.headers.origin;
    if (
      origin !== undefined &&
      MCP.test(req.path) &&
      !address.allowsOrigin(origin, `${req.protocol}://${host}`)
    ) {
      return refuse(
        req,
        res,
        `requests from pages of another origin (${origin.slice(0, 256)}) are not answered here`,
      );
    }
    next();
  };
}

function refuse(req: Request, res: Response, message: string): void {
  if (MCP.test(req.path)) {
    res.status(403).json({
      jsonrpc: '2.0',
      error: { code: -32000, message: `Forbidden: ${message}` },
      id: null,
    });
    return;
  }
  sendError(res, 403, 'forbidden_host', message);
}
