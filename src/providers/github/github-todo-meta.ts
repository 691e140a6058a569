import type { Todo } from '../../data/index.js';
import type { Destination } from '../provider.js';
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
export function githubMetaOf(todo: Pick<Todo, 'source' | 'meta'>): GitHubTodoMeta | null {
  if (todo.source !== 'github') return null;
  // Written by the intake itself, so trusted as it stands.
  return (todo.meta.github as GitHubTodoMeta | undefined) ?? null;
}

/** The issue or pull request a GitHub todo writes back to, through its installation. */
export function githubDestinationOf(todo: Todo): Destination | null {
  const github = githubMetaOf(todo);
  if (!github || github.installation_id === null || github.issue_number === null) return null;
  return {
    source: 'github',
    target: {
      installation_id: github.installation_id,
      owner: github.owner,
      repo: github.repo,
      issue_number: github.issue_number,
    },
    rule: github.rule,
  };
}
