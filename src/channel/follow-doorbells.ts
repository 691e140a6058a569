import type { Credentials } from '../client/api-client.js';
import { ApiError } from '../client/client-errors.js';
import { followEventStream } from '../client/follow-event-stream.js';
import type { Doorbell } from '../contract/doorbell.js';
import type { ChannelEvent } from './channel-protocol.js';
import type { ChannelSession } from './channel-session.js';

/** The longest pause between two connects while the server is away or refuses the token. */
const RECONNECT_MAX_MS = 30_000;

/**
 * The channel's consumer session: the server's event stream, followed for as long as the channel
 * runs (src/client: backoff, the silence check). Each doorbell goes to `onDoorbell`; the session
 * is told once when the stream is lost (and why: unreachable, or the token refused), and once
 * when it is back. Resolves when `signal` stops it.
 */
export function followDoorbells(options: {
  credentials: Credentials;
  signal: AbortSignal;
  session: ChannelSession;
  onDoorbell: (doorbell: Doorbell) => void;
  /** A `status` event for the session. */
  tell: (event: ChannelEvent) => void;
  log: (message: string) => void;
}): Promise<void> {
  const { session, tell, log } = options;
  const base = options.credentials.url.replace(/\/+$/, '');
  // What the session was last told is wrong with the stream; undefined while nothing is.
  let told: 'refused' | 'unreachable' | undefined;
  return followEventStream({
    credentials: options.credentials,
    query: { consumer: 'channel' },
    client: 'channel',
    signal: options.signal,
    maxDelayMs: RECONNECT_MAX_MS,
    onEvent(name, data) {
      if (name === 'ready') {
        session.attached((JSON.parse(data) as { session_id?: string }).session_id);
        if (told) {
          told = undefined;
          tell({ content: 'switchboard: connected again', meta: { event: 'status' } });
        }
      } else if (name === 'wake' || name === 'digest') {
        // One unreadable doorbell is logged and skipped; it must not end the stream.
        try {
          options.onDoorbell(JSON.parse(data) as Doorbell);
        } catch (error) {
          log(`ignored an unreadable ${name} event: ${String((error as Error).message)}`);
        }
      }
    },
    onLost(error) {
      const refused =
        error instanceof ApiError && (error.status === 401 || error.status === 403)
          ? error.status
          : undefined;
      log(
        `event stream: ${
          refused
            ? `${base} refused this channel's token (HTTP ${refused}); trying again — check SWITCHBOARD_TOKEN`
            : error.message
        }`,
      );
      session.detached();
      // Lost or never there: say so once per outage (and again if the reason changes: a server
      // back after a restart may now refuse the token), and keep trying without exiting.
      if (told !== (refused ? 'refused' : 'unreachable')) {
        told = refused ? 'refused' : 'unreachable';
        tell({
          content: refused
            ? `switchboard: ${base} refused this channel's token (HTTP ${refused}); retrying. Ask your human to check SWITCHBOARD_TOKEN.`
            : `switchboard: cannot reach ${base}; retrying. Waiting todos stay queued and arrive as a digest when it is back.`,
          meta: { event: 'status' },
        });
      }
      return true;
    },
  });
}
