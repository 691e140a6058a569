import type { PrincipalKind } from './principal.js';

/**
 * How a token was vended (migration 0039): the command that printed it, or the sign-in that got
 * it (`login`: the CLI's, `oauth`: an MCP client's, both under a grant).
 */
export const TOKEN_KINDS = [
  'up',
  'admin_token',
  'human_add',
  'human_reactivate',
  'agent_add',
  'login',
  'oauth',
] as const;
export type TokenKind = (typeof TOKEN_KINDS)[number];

/** A token as `token list` shows it: how it came about and its use, never its secret or hash. */
export interface TokenListing {
  id: number;
  /** How it was vended; null for a human's token from before that was recorded. */
  kind: TokenKind | null;
  principal: string;
  principal_kind: PrincipalKind;
  /** The human it belongs to: the principal itself, or the agent's owner. */
  human: string;
  /** A sign-in's: the client it was issued to, and its grant (revoking one ends the other). */
  client: string | null;
  grant_id: number | null;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}
