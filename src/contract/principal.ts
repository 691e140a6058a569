import type { Todo } from './todo.js';

/** A principal as stored and as the API shows it (without `id`); shared by server and clients. */
export type PrincipalKind = 'human' | 'agent';

/** A human, or an agent owned by a human, as stored in `principals`. */
export interface Principal {
  id: number;
  name: string;
  kind: PrincipalKind;
  github_login: string | null;
  is_admin: boolean;
  /** Agents only: the human who owns the agent. */
  owner: string | null;
  /** Agents only: the queues the agent may see and work. */
  queues: string[] | null;
  created_at: Date;
  revoked_at: Date | null;
}

/** A human with their settings, who has them as backup, and their agents (`human show`). */
export interface HumanDetails extends Principal {
  /** Who takes their pending approvals when they are deactivated. */
  backup: string | null;
  /** The humans whose backup this one is. */
  backup_for: string[];
  agents: Pick<Principal, 'name' | 'queues' | 'created_at' | 'revoked_at'>[];
}

/** What deactivating a human ended, and where their pending approvals went. */
export interface Deactivation {
  human: Principal;
  /** Their agents revoked with them (those revoked before are not counted again). */
  agents: string[];
  /** Tokens revoked: theirs and their agents'. */
  tokens_revoked: number;
  /** OAuth grants revoked: the CLI's sign-ins and MCP clients' (their sessions end with them). */
  sign_ins_revoked: number;
  /** Console sessions ended. */
  sessions_ended: number;
  /** Their pending approvals, now their backup's (`assignee`) or, with none, the admins' (null). */
  approvals: Todo[];
}
