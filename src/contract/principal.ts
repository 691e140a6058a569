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
