/** The limits that hold under abuse (README, Limits), as the server's configuration gives them. */
export interface LimitSettings {
  /**
   * SWITCHBOARD_TRUST_PROXY, Express's `trust proxy`: which peers' X-Forwarded-For names the
   * client. `false`: none (the socket's address is the client's); a number: that many proxies in
   * front; a list: the proxies' addresses, CIDRs, or `loopback`, `linklocal`, `uniquelocal`.
   */
  trustProxy: false | number | string[];
  /** SWITCHBOARD_RATE_LIMIT: requests per second per principal on the API and MCP; undefined: off. */
  ratePerSecond: number | undefined;
  /** SWITCHBOARD_MAX_MCP_SESSIONS: live MCP sessions per principal. */
  mcpSessions: number;
  /** SWITCHBOARD_MAX_STREAMS: open event streams per principal (API, MCP, console pages). */
  streams: number;
  /** SWITCHBOARD_UNVERIFIED_BODY_MB, in bytes: webhook bodies held before their signature is checked, all requests together. */
  unverifiedBodyBytes: number;
  /** SWITCHBOARD_AUTH_FAILURE_LIMIT: failed authentications per client address per 15 minutes. */
  authFailures: number;
}

export const DEFAULT_LIMITS: LimitSettings = {
  trustProxy: false,
  ratePerSecond: undefined,
  mcpSessions: 100,
  streams: 100,
  // Two deliveries of GitHub's largest (25 MB) and room besides; ten held the server at +290 MB.
  unverifiedBodyBytes: 64 * 1024 * 1024,
  authFailures: 100,
};
