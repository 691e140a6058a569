import { header, type Draft, type Provider } from '../provider.js';
import { verifySha256Signature } from '../verify-sha256-signature.js';
import { createDeliveryReconciler } from './create-delivery-reconciler.js';
import { decideByComment } from './decide-by-comment.js';
import { evaluateTrust } from './evaluate-trust.js';
import { githubDestinationOf, type GitHubTodoMeta } from './github-todo-meta.js';
import { readRepositoryRules } from './load-repository-config.js';
import { readDeliveryFacts, type GitHubFacts } from './read-delivery-facts.js';
import { readVerdictCommand } from './read-verdict-command.js';
import { DEFAULT_RECONCILE_TUNING } from './reconcile-deliveries.js';
import { githubRules, type RepositoryConfig } from './repository-config.js';
import { mayMatch, routeEvent, type RuleName } from './route-event.js';
import { sendWriteBack } from './send-write-back.js';

// GitHub's event names: `issues`, `pull_request_review_comment`, `security_and_analysis`, …
const EVENT = /^[a-z][a-z0-9_]{0,99}$/;
const MISMATCH =
  'signature does not match: X-Hub-Signature-256 must be the HMAC of the body under WEBHOOK_SECRET';

/** Where a GitHub todo's write-backs and meta point: the issue or pull request, the comment. */
interface GitHubTarget {
  issue_number: number | null;
  comment_id: number | null;
}

/**
 * The GitHub App, as one provider among the others: `X-Hub-Signature-256` is the HMAC-SHA256 of
 * the body under WEBHOOK_SECRET, `X-GitHub-Delivery` its id, `X-GitHub-Event` the event; the
 * facts are the repository, sender, installation and the fields the rules read; the rules are
 * GitHub's defaults under the repository's `.github/switchboard.yml`; trust weighs the author's
 * association with the repository, or whose code ran. Only GitHub has the rest: the repository's
 * own rules, verdicts given in a comment, 👀 reactions, and reconcile with its delivery log —
 * each through the App's client (Probot), when the server has the App's credentials.
 */
export const githubProvider: Provider<RepositoryConfig> = {
  kind: 'github',
  name: 'GitHub',
  // As GitHub's own names were always given in this refusal.
  requiredHeaders: [['x-github-event'], ['x-github-delivery']],
  checkHeaders: (headers) =>
    EVENT.test(header(headers, 'x-github-event') ?? '')
      ? null
      : 'X-GitHub-Event must be the name of a GitHub event',
  async verify(raw, headers, secrets) {
    const signature = header(headers, 'x-hub-signature-256');
    if (!signature) return { ok: false, reason: 'required header missing: x-hub-signature-256' };
    if (!signature.startsWith('sha256=')) return { ok: false, reason: MISMATCH };
    return verifySha256Signature(raw, signature, secrets, MISMATCH);
  },
  deliveryIdName: 'X-GitHub-Delivery',
  deliveryId: (headers) => header(headers, 'x-github-delivery') ?? null,
  readFacts: (headers, payload) =>
    readDeliveryFacts(header(headers, 'x-github-event') ?? 'unknown', payload),
  columns(facts) {
    const { repository, sender, installation_id } = facts as Partial<GitHubFacts>;
    return {
      subject: repository?.fullName ?? null,
      actor: sender?.login ?? null,
      installationId: installation_id ?? null,
    };
  },
  rules: githubRules,
  route: (facts, config) => routeEvent(facts as GitHubFacts, config),
  trust(facts, draft, config) {
    const { sender, repository } = facts as GitHubFacts;
    if (!sender || !repository || !draft.origin) return { outcome: 'unattributed' };
    const trust = evaluateTrust(sender, draft.origin, config.trust);
    if (trust === 'bot')
      return { outcome: 'bot', reason: `${sender.login} is not an allowlisted bot` };
    if (trust === 'trusted') return { outcome: 'trusted', attributedTo: sender.login };
    const origin = draft.origin;
    const described =
      'association' in origin
        ? `author association ${origin.association}`
        : origin.sameRepository
          ? 'code from this repository'
          : 'code from a fork';
    return {
      outcome: 'untrusted',
      attributedTo: sender.login,
      reason: `${sender.login} (${described}) is not trusted`,
    };
  },
  todoMeta({ deliveryId, facts, draft, attributedTo }) {
    const { repository, installation_id } = facts as GitHubFacts;
    const target = draft.target as unknown as GitHubTarget;
    const github: GitHubTodoMeta = {
      delivery_id: deliveryId,
      event: facts.event,
      action: facts.action,
      rule: draft.rule as RuleName,
      owner: repository!.owner,
      repo: repository!.name,
      installation_id,
      issue_number: target.issue_number,
      comment_id: target.comment_id,
      sender: attributedTo,
    };
    return { github };
  },
  repositoryRules: {
    mayMatch: (facts) => mayMatch(facts as GitHubFacts),
    read: async (clients, facts, timeoutMs) =>
      clients.github
        ? readRepositoryRules(clients.github, facts as GitHubFacts, timeoutMs)
        : { rules: githubRules.defaults(''), warning: null },
  },
  verdicts: {
    read: (facts) => readVerdictCommand(facts.event, (facts as GitHubFacts).fields),
    decide: (tx, todos, facts, command) =>
      decideByComment(tx, todos, facts as GitHubFacts, command),
  },
  reactions: (facts, draft) => reactionsFor(facts as GitHubFacts, draft),
  writeBack: {
    destinationOf: githubDestinationOf,
    footer: (line) => `\n\n<sub>${line}</sub>`,
    send: (request, clients) => sendWriteBack(request, clients),
  },
  reconciler: ({ sql, direct, log, clients, off, tuning }) =>
    createDeliveryReconciler({
      sql,
      direct,
      log,
      off,
      auth: () => {
        const app = clients.github;
        if (!app) throw new Error('no GitHub App credentials');
        return app.auth();
      },
      tuning: { ...DEFAULT_RECONCILE_TUNING, ...tuning },
    }),
};

/**
 * 👀 says "switchboard took this on": on the issue (labelled or assigned) or the comment that
 * made the todo, through the delivery's installation.
 */
function reactionsFor(
  facts: GitHubFacts,
  draft: Draft,
): ReturnType<NonNullable<Provider['reactions']>> {
  const target = draft.target as unknown as GitHubTarget;
  if (!draft.react) return { writeBacks: [], note: null };
  if (facts.installation_id === null) {
    return { writeBacks: [], note: 'no installation in the delivery: nothing is written back' };
  }
  if (target.issue_number === null || !facts.repository) return { writeBacks: [], note: null };
  const comment = draft.react === 'comment';
  return {
    writeBacks: [
      {
        write_back: 'reaction',
        target: {
          installation_id: facts.installation_id,
          owner: facts.repository.owner,
          repo: facts.repository.name,
          issue_number: target.issue_number,
          ...(comment && { comment_id: target.comment_id }),
        },
        body: 'eyes',
        what: comment ? 'comment_reaction' : 'issue_reaction',
      },
    ],
    note: null,
  };
}
