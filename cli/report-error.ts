import {
  ApiError,
  CertificateError,
  ConnectionError,
  CredentialsError,
} from '../src/client/client-errors.js';
import { CommandError, EXIT } from './command-error.js';

/**
 * Reports a failed command as one line on stderr (the stack only with DEBUG set) and returns
 * the exit code it stands for.
 */
export function reportError(error: unknown): number {
  const { code, message } = describe(error);
  if (message) process.stderr.write(`${oneLine(message)}\n`);
  if (process.env.DEBUG && error instanceof Error && error.stack) {
    process.stderr.write(`${error.stack}\n`);
  }
  return code;
}

function describe(error: unknown): { code: number; message: string } {
  if (error instanceof CommandError) return { code: error.exitCode, message: error.message };
  if (error instanceof CredentialsError || error instanceof CertificateError) {
    return { code: EXIT.unreachable, message: error.message };
  }
  if (error instanceof ConnectionError) {
    return {
      code: EXIT.unreachable,
      message: `${error.message} — is the server running? ('switchboard up' starts one)`,
    };
  }
  if (error instanceof ApiError) {
    if (error.status === 401) {
      return {
        code: EXIT.unreachable,
        message: `${error.message} — run 'switchboard login' with a valid token`,
      };
    }
    if (error.code === 'database_unavailable') {
      return {
        code: EXIT.unreachable,
        message:
          "the server's database is not answering — try again shortly; if it lasts, the server's log says why",
      };
    }
    if (error.status >= 400 && error.status < 500) {
      return { code: EXIT.refused, message: error.message };
    }
    return { code: EXIT.unexpected, message: `the server failed: ${error.message}` };
  }
  // oclif's own errors carry their exit code: `this.exit(n)` (nothing to say) and parse errors
  // (unknown flag, missing argument, bad value), which package.json's oclif.exitCodes make 2.
  const oclif = (error as { oclif?: { exit?: unknown } } | null)?.oclif;
  if (typeof oclif?.exit === 'number') {
    if ((error as { code?: unknown }).code === 'EEXIT') return { code: oclif.exit, message: '' };
    const text = (error as Error).message.replace(/See more help with --help/g, '');
    return { code: oclif.exit, message: `${text.trim()} — see --help` };
  }
  const text = error instanceof Error ? error.message : String(error);
  return { code: EXIT.unexpected, message: `unexpected error: ${text}` };
}

/** Errors are one line: multi-line messages (oclif's lists, server text) are joined. */
function oneLine(message: string): string {
  return message
    .split(/\s*\n\s*/)
    .filter(Boolean)
    .join('; ')
    .replace(/:;/g, ':')
    .replace(/\s+/g, ' ');
}
