import { pino, type Logger as PinoLogger } from 'pino';
import type { Logger } from '../../platform/logger.js';

/**
 * The logger Probot gets: the server's own pino logger (level, redaction and destination
 * included), with one change — errors are logged without the `event` that @octokit/webhooks
 * attaches to them, which holds the whole payload (and, for a bad signature, the signature).
 * Anything that is not pino (tests' silent logger) gets a silent pino.
 */
export function probotLogger(log: Logger): PinoLogger {
  if (!isPino(log)) return pino({ level: 'silent' });
  return log.child({}, { serializers: { err: withoutPayload } });
}

function isPino(log: Logger): log is Logger & PinoLogger {
  const candidate = log as Partial<PinoLogger>;
  return typeof candidate.child === 'function' && typeof candidate.levels === 'object';
}

export function withoutPayload(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const status = (error as { status?: unknown }).status;
  return {
    type: error.name,
    message: error.message.slice(0, 1000),
    ...(typeof status === 'number' ? { status } : {}),
    ...(error instanceof AggregateError ? { errors: error.errors.map(withoutPayload) } : {}),
    stack: error.stack,
  };
}
