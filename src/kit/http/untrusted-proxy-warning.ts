import type { RequestHandler } from 'express';
import type { Logger } from '../../platform/logger.js';

/**
 * With SWITCHBOARD_TRUST_PROXY unset, X-Forwarded-For is ignored, as it must be: anyone could
 * send it. But a proxy in front then makes every client one address to the limits, so that one
 * stranger's bad webhook signatures shut GitHub's deliveries out. The first request that carries
 * the header has it said once, in the log, with what to set (express-rate-limit's own check said
 * it as a stack trace on stderr, in the OAuth endpoints only).
 */
export function warnOfUntrustedProxy(log: Logger): RequestHandler {
  let said = false;
  return (req, _res, next) => {
    if (!said && req.headers['x-forwarded-for'] !== undefined) {
      said = true;
      log.warn(
        { peer: req.socket.remoteAddress },
        'requests carry X-Forwarded-For, which is ignored while SWITCHBOARD_TRUST_PROXY is unset: behind a proxy, every client is the proxy’s address to the limits (failed sign-ins, tokens, webhook signatures) — ' +
          'set SWITCHBOARD_TRUST_PROXY=1 for the one proxy in front (README: Behind a proxy); with no proxy in front, a client sent the header itself and nothing needs doing',
      );
    }
    next();
  };
}
