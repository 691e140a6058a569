import type { Todo } from '../../ledger/index.js';
import type { RuleName } from './route-event.js';

/**
 * What a GitHub todo keeps in `meta.github`: where it came from and what write-back needs to
 * reach the issue, pull request or comment again (the installation, owner, repo, numbers).
 */
export interface GitHubTodoMeta {
  delivery_id: string;
  event: string;
  action: string | null;
  rule: RuleName;
  owner: string;
  repo: string;
  installation_id: number | null;
  issue_number: number | null;
  comment_id: number | null;
  sender: string;
}

/** The GitHub details of a todo this provider created, or null for any other todo. */
export function githubMetaOf(todo: Todo): GitHubTodoMeta | null {
  if (todo.source !== 'github') return null;
  // Written by ingestDelivery itself, so trusted as it stands.
  return (todo.meta.github as GitHubTodoMeta | undefined) ?? null;
}
