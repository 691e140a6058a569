import type postgres from 'postgres';
import { actorFor } from '../../data/actor.js';
import { LedgerError } from '../../data/ledger-error.js';
import { findHumanByGithubLogin } from '../../data/principals/principals.js';
import { approvalSubject } from '../../data/todos/approval-subject.js';
import { displayId } from '../../data/todos/todo.js';
import type { TodoTransaction } from '../../todos/create-todo-service.js';
import type { VerdictCommand } from '../provider.js';
import { githubMetaOf } from './github-todo-meta.js';
import type { GitHubFacts } from './read-delivery-facts.js';

/**
 * Records a verdict given in a GitHub comment, through the todo service in the delivery's
 * transaction. Only the switchboard human whose GitHub login wrote the (signature-verified)
 * comment can decide, only an approval they may decide, and only on the issue or pull request the
 * approval's work came from. Returns what happened, for the delivery's record.
 */
export async function decideByComment(
  tx: postgres.TransactionSql,
  todos: TodoTransaction,
  facts: GitHubFacts,
  command: VerdictCommand,
): Promise<{ decided: boolean; note: string }> {
  const ref = `approval ${displayId(command.approvalId)}`;
  const login = facts.sender?.login;
  const human = login ? await findHumanByGithubLogin(tx, login) : undefined;
  if (!human)
    return {
      decided: false,
      note: `no switchboard human has the GitHub login ${login ?? '(none)'}`,
    };

  const about = await approvalSubject(tx, command.approvalId);
  const github = about ? githubMetaOf(about) : null;
  if (
    !github ||
    `${github.owner}/${github.repo}`.toLowerCase() !== facts.repository?.fullName.toLowerCase() ||
    github.issue_number !== command.issueNumber
  ) {
    return { decided: false, note: `${ref} is not about work from this issue or pull request` };
  }
  // The ledger would answer "not found" (another human's approval is not theirs to see); the
  // delivery's record, read by switchboard's humans, says plainly why the comment did nothing.
  if (about!.assignee !== human.name && !human.is_admin) {
    return {
      decided: false,
      note: `${ref} is for ${about!.assignee ?? 'the admins'} to decide${about!.assignee ? ' (or an admin)' : ''}`,
    };
  }
  try {
    await todos.decide(
      actorFor(human, 'github'),
      command.approvalId,
      command.verdict,
      command.note,
    );
    return {
      decided: true,
      note: `${ref} ${command.verdict === 'allow' ? 'approved' : 'denied'} by ${human.name}`,
    };
  } catch (error) {
    if (error instanceof LedgerError) return { decided: false, note: error.message };
    throw error;
  }
}
