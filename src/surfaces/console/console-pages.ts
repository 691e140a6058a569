import { approvalWaitsFor, listTodos, type Actor, type Todo } from '../../data/index.js';
import { agentsPage } from './views/agents-page.js';
import { approvalPage, approvalsPage } from './views/approvals-page.js';
import { boardPage } from './views/board-page.js';
import { deliveriesPage } from './views/deliveries-page.js';
import type { PageLoader } from '../../kit/pages/page-view.js';
import { quarantinePage } from './views/quarantine-page.js';
import { todoPage } from './views/todo-page.js';
import type postgres from 'postgres';

// Ids as the JSON API takes them: digits, no leading zero, below 2^53.
const ID = '(?<id>[1-9][0-9]{0,14})';

/** Every live page of the console, by path; its stream finds its loader the same way. */
const PAGES: [RegExp, PageLoader][] = [
  [/^\/$/, approvalsPage],
  [new RegExp(`^/approvals/${ID}$`), approvalPage],
  [/^\/todos$/, boardPage],
  [new RegExp(`^/todos/${ID}$`), todoPage],
  [/^\/quarantine$/, quarantinePage],
  [/^\/deliveries$/, deliveriesPage],
  [/^\/agents$/, agentsPage],
];

export function findPage(
  path: string,
): { load: PageLoader; params: Record<string, string> } | undefined {
  for (const [pattern, load] of PAGES) {
    const match = pattern.exec(path);
    if (match) return { load, params: { ...match.groups } };
  }
  return undefined;
}

/** The approvals waiting for this human: the title's count and the notifications. */
export async function waitingApprovals(sql: postgres.Sql, actor: Actor): Promise<Todo[]> {
  const todos = await listTodos(sql, actor, {
    queue: 'approvals',
    state: 'pending',
    mine: true,
    limit: 500,
  });
  const now = Date.now();
  return todos.filter(
    (todo) => approvalWaitsFor(todo, actor) && (todo.expires_at?.getTime() ?? 0) > now,
  );
}
