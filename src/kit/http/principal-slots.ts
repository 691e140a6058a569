import { HttpError } from './http-error.js';
export interface PrincipalSlots {
  /** The most one principal may hold at once, across every server process. */
  readonly limit: number;
  /** The most it may hold in this process: the limit shared out among the live processes. */
  perProcess(): number;
  /** Takes one of `principal`'s slots: its release (idempotent), or undefined when all are held. */
  take(principal: string): (() => void) | undefined;
  /** Slots `principal` holds now, in this process. */
  held(principal: string): number;
}

/**
 * A cap on what one principal holds at once (MCP sessions; event streams, wherever they are
 * opened), so that one token cannot hold the server's memory and sockets for everyone: one
 * opened 3,000 MCP sessions in 2.3 s. Each process holds its share, `limit` divided by the live
 * processes (at least one): counted in memory, with no statement when a stream opens, and never
 * more than `limit` in all (fewer, when a principal's streams crowd onto one process).
 */
export function createPrincipalSlots(
  limit: number,
  processes: () => number = () => 1,
): PrincipalSlots {
  const counts = new Map<string, number>();
  const perProcess = () => Math.max(1, Math.floor(limit / Math.max(1, processes())));
  return {
    limit,
    perProcess,
    take(principal) {
      const count = counts.get(principal) ?? 0;
      if (count >= perProcess()) return undefined;
      counts.set(principal, count + 1);
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        const left = (counts.get(principal) ?? 1) - 1;
        if (left > 0) counts.set(principal, left);
        else counts.delete(principal);
      };
    },
    held: (principal) => counts.get(principal) ?? 0,
  };
}

/**
 * What a principal at its cap holds, for the refusal: `100 event streams open, the most allowed
 * per principal (SETTING…)`, or, with the limit shared out, its share on this process.
 */
export function atCap(slots: PrincipalSlots, what: string, setting: string): string {
  const here = slots.perProcess();
  if (here >= slots.limit) return `${here} ${what}, the most allowed per principal (${setting}`;
  return `${here} ${what} on this server process, its share of the ${slots.limit} allowed per principal (${setting}, shared out among the live server processes`;
}

/** The refusal of a stream over the cap: which cap, and how to free a slot. */
export function tooManyStreams(streams: PrincipalSlots, name: string): HttpError {
  return new HttpError(
    429,
    'too_many_streams',
    `${name} has ${atCap(streams, 'event streams open', 'SWITCHBOARD_MAX_STREAMS')}; ` +
      'API /events, MCP notification streams and console pages count alike): close one to free its slot',
  );
}
