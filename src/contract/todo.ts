/**
 * The todo as it crosses every boundary (DESIGN §4): the ledger stores it, the API, MCP and the
 * channel send it, the CLI prints it. Shared by server and clients, so it imports nothing.
 */
export const TODO_STATES = [
  'pending',
  'claimed',
  'done',
  'failed',
  'canceled',
  'quarantined',
] as const;
export type TodoState = (typeof TODO_STATES)[number];

/** Every provider deliveries come from: the GitHub App, and each kind of source (DESIGN §5.7). */
export const PROVIDER_KINDS = [
  'github',
  'gitea',
  'forgejo',
  'gitlab',
  'linear',
  'standard-webhooks',
] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** Where a todo came from: an adapter, or the kind of provider whose delivery made it. */
export const TODO_SOURCES = ['cli', 'mcp', 'channel', 'api', ...PROVIDER_KINDS] as const;
export type TodoSource = (typeof TODO_SOURCES)[number];

export type Verdict = 'allow' | 'deny';

/** The todo as users see it (DESIGN §4): snake_case keys, exactly what JSON outputs carry. */
export interface Todo {
  id: number;
  queue: string;
  kind: string;
  title: string;
  body: string | null;
  state: TodoState;
  source: TodoSource;
  url: string | null;
  attributed_to: string;
  assignee: string | null;
  idempotency_key: string | null;
  claimed_by: string | null;
  lease_expires_at: Date | null;
  /** Failed todos with attempts left: when the next attempt may start. */
  retry_at: Date | null;
  attempt: number;
  max_attempts: number;
  result: unknown;
  summary: string | null;
  requested_by: string | null;
  request_id: string | null;
  about_todo_id: number | null;
  expires_at: Date | null;
  verdict: Verdict | null;
  decided_by: string | null;
  decided_at: Date | null;
  meta: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

/** A todo just claimed, with the lease token its holder must present from now on. */
export interface ClaimedTodo extends Todo {
  lease_token: string;
}

/** One entry of a todo's history. */
export interface TodoEvent {
  id: number;
  at: Date;
  actor_kind: 'human' | 'agent' | 'system';
  actor: string;
  via: string;
  action: string;
  data: Record<string, unknown> | null;
}

export const displayId = (id: number) => `#${id}`;
