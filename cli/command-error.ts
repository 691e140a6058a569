/** The exit codes of DESIGN §5.3; scripts and agents branch on them. */
export const EXIT = {
  ok: 0,
  unexpected: 1,
  usage: 2,
  /** Refused by the ledger: not found, conflict, forbidden, lease lost, invalid. */
  refused: 3,
  /** Cannot reach or authenticate to the server. */
  unreachable: 4,
  /** `approval request --wait`: no verdict came in time (or the approval expired first). */
  noVerdict: 5,
  /** `approval request --wait` stopped by Ctrl-C (SIGINT) or SIGTERM: 128 + its number, as a shell says. */
  interrupted: 130,
  terminated: 143,
} as const;

/** A failure the CLI itself detects, with the exit code it stands for and a line saying what to do. */
export class CommandError extends Error {
  override readonly name = 'CommandError';

  constructor(
    message: string,
    readonly exitCode: (typeof EXIT)[keyof typeof EXIT],
  ) {
    super(message);
  }
}
