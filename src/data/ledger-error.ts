/**
 * Outcomes a person or agent can act on, each with a stable code. Every adapter maps the code
 * its own way (HTTP status, MCP `isError` with a hint, CLI exit 3). Anything else thrown from
 * the ledger is a bug and surfaces as a plain Error.
 */
export type LedgerErrorCode = 'not_found' | 'conflict' | 'forbidden' | 'lease_lost' | 'invalid';

export class LedgerError extends Error {
  override readonly name = 'LedgerError';

  constructor(
    readonly code: LedgerErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (message: string) => new LedgerError('not_found', message);
export const conflict = (message: string) => new LedgerError('conflict', message);
export const forbidden = (message: string) => new LedgerError('forbidden', message);
export const leaseLost = (message: string) => new LedgerError('lease_lost', message);
export const invalid = (message: string) => new LedgerError('invalid', message);
