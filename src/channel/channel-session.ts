import { setTimeout as sleep } from 'node:timers/promises';

/** How long a permission prompt waits for the channel to attach before it is relayed anyway. */
const ATTACH_WAIT_MS = 10_000;

export interface ChannelSession {
  /** The event stream said `ready`: this is the consumer session the channel is attached as. */
  attached(id: string | undefined): void;
  /** The stream was lost: no session until the next `ready`. */
  detached(): void;
  /**
   * The session the approvals this channel asks for end with. Claude Code may relay a prompt
   * before there is one (at start-up, during a reconnect): then this waits for it, a while, or
   * the approval would outlive the session.
   */
  current(): Promise<string | undefined>;
}

export function createChannelSession(stopped: AbortSignal): ChannelSession {
  let id: string | undefined;
  let onAttached = () => {};
  let attached = new Promise<void>((resolve) => (onAttached = resolve));
  return {
    attached(session) {
      id = session;
      onAttached();
    },
    detached() {
      if (id === undefined) return;
      id = undefined;
      attached = new Promise<void>((resolve) => (onAttached = resolve));
    },
    async current() {
      if (id === undefined) {
        await Promise.race([
          attached,
          sleep(ATTACH_WAIT_MS, undefined, { signal: stopped }).catch(() => {}),
        ]);
      }
      return id;
    },
  };
}
