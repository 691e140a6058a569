import type postgres from 'postgres';
import { Context, type Probot } from 'probot';
import { neutraliseLine } from '../../contract/neutralise-text.js';
import { decideSourceDelivery } from '../../sources/decide-source-delivery.js';
import { providerFor } from '../../sources/provider-for.js';
import type { SourceKind } from '../../sources/source-kinds.js';
import type { SourceFacts } from '../../sources/source-provider.js';
import { getSource } from '../../sources/source-store.js';
import { decideDelivery } from './decide-delivery.js';
import type { GitHubTodoMeta } from './github-todo-meta.js';
import { loadRepositoryConfig, type LoadedConfig } from './load-repository-config.js';
import type { DeliveryFacts } from './read-delivery-facts.js';
import { DEFAULT_CONFIG } from './repository-config.js';
import { mayMatch } from './route-event.js';
import type {
  DeliveryExplanation,
  DeliveryRecord as WireDeliveryRecord,
} from '../../contract/deliveries.js';
import { withTimeout } from './with-timeout.js';

/** A delivery's row as read here: as the API shows it, but for its time, a Date until sent. */
export type DeliveryRecord = Omit<WireDeliveryRecord, 'received_at'> & { received_at: Date };

export type Explanation = DeliveryExplanation<DeliveryRecord>;

/** Reads a repository's `.github/switchboard.yml` through the App; null without App credentials. */
export type ReadRepositoryConfig =
  | ((installationId: number, repository: { owner: string; name: string }) => Promise<LoadedConfig>)
  | null;

/**
 * `deliveries explain` reads a repository's rules file as the intake does — Probot's loader,
 * through the installation, within the same budget — by way of a Context that names only the
 * repository. Whatever goes wrong, the defaults apply and the warning says why.
 */
export function repositoryConfigReader(probot: Probot, timeoutMs: number): ReadRepositoryConfig {
  return async (installationId, repository) => {
    const read = async () => {
      const octokit = await probot.auth(installationId);
      const payload = { repository: { owner: { login: repository.owner }, name: repository.name } };
      const event = { id: 'deliveries-explain', name: 'explain', payload } as never;
      return loadRepositoryConfig(new Context(event, octokit, probot.log), timeoutMs);
    };
    try {
      // The installation token comes first, and has no deadline of its own.
      return await withTimeout(read(), timeoutMs + 500);
    } catch {
      return {
        config: DEFAULT_CONFIG,
        warning: `repository config not read: GitHub did not answer within ${timeoutMs} ms; defaults used`,
      };
    }
  };
}

/** The record of delivery `id`, GitHub's or a source's (one id space); null if there is none. */
export async function readDelivery(sql: postgres.Sql, id: number): Promise<DeliveryRecord | null> {
  const [row] = await sql<DeliveryRecord[]>`
    select id, source, kind, delivery_id, event, action, subject, actor, installation_id,
           disposition::text, todo_id, note, facts, encode(body_sha256, 'hex') as body_sha256,
           received_at
    from deliveries where id = ${id}`;
  return row ?? null;
}

/**
 * A dry run: today's rules on the facts the delivery was recorded with — the same steps the
 * intake takes (route, then trust), with nothing written and nothing sent.
 */
export async function explainDelivery(
  sql: postgres.Sql,
  delivery: DeliveryRecord,
  readConfig: ReadRepositoryConfig,
): Promise<Explanation> {
  const was = { disposition: delivery.disposition, todo_id: delivery.todo_id, note: delivery.note };
  const explained =
    delivery.source === 'github'
      ? await explainGitHub(delivery, readConfig)
      : await explainSource(sql, delivery);
  if (explained.would && delivery.disposition === 'duplicate') {
    explained.would.note = [
      'this record is a receipt for a redelivery or a replay, which makes nothing; this is what the rules make of its facts',
      explained.would.note,
    ]
      .filter(Boolean)
      .join('; ');
  }
  return { delivery, was, ...explained };
}

type Explained = Pick<Explanation, 'would' | 'rules'>;

/** GitHub's facts as read-delivery-facts.ts and record-delivery.ts keep them. */
interface StoredGitHubFacts {
  event: string;
  action: string | null;
  repository: DeliveryFacts['repository'];
  sender: DeliveryFacts['sender'];
  installation_id: number | null;
  fields: Record<string, unknown>;
}

async function explainGitHub(
  delivery: DeliveryRecord,
  readConfig: ReadRepositoryConfig,
): Promise<Explained> {
  const stored = delivery.facts as StoredGitHubFacts | null;
  if (!stored) {
    return {
      would: null,
      rules: {
        from: 'defaults',
        note: 'recorded before deliveries kept their facts: nothing to run the rules on',
      },
    };
  }
  const facts: DeliveryFacts = {
    deliveryId: delivery.delivery_id,
    event: stored.event,
    action: stored.action,
    repository: stored.repository,
    sender: stored.sender,
    installationId: stored.installation_id,
  };
  let loaded: LoadedConfig = { config: DEFAULT_CONFIG, warning: null };
  let rules: Explained['rules'];
  // As the intake does: only an event a rule could want is worth reading the file for.
  if (!mayMatch(facts, stored.fields)) {
    rules = { from: 'defaults', note: 'no rule, default or configured, can match this event' };
  } else if (!readConfig) {
    rules = {
      from: 'defaults',
      note: "no GitHub App credentials on this server: the defaults, as for a delivery now (a repository's .github/switchboard.yml cannot be read)",
    };
  } else if (!facts.repository || facts.installationId === null) {
    rules = {
      from: 'defaults',
      note: 'the delivery names no repository and installation: the defaults',
    };
  } else {
    loaded = await readConfig(facts.installationId, facts.repository);
    rules = loaded.warning
      ? { from: 'defaults', note: loaded.warning }
      : {
          from: 'repository',
          note: `${facts.repository.fullName}'s .github/switchboard.yml over the defaults, read from GitHub now (the defaults alone where it has none)`,
        };
  }
  const decision = decideDelivery(
    facts,
    stored.fields,
    { config: loaded.config, warning: null },
    readConfig !== null,
  );
  const input = decision.todo?.input;
  const meta = input?.meta?.github as GitHubTodoMeta | undefined;
  return {
    rules,
    would: {
      disposition: decision.disposition,
      rule: meta?.rule ?? null,
      queue: input?.queue ?? null,
      kind: input?.kind ?? null,
      title: input ? neutraliseLine(input.title) : null,
      assignee: input?.assignee ?? null,
      attributed_to: input?.attributed_to ?? null,
      write_backs: decision.todo?.writeBacks.map((writeBack) => writeBack.kind) ?? [],
      verdict: decision.verdict
        ? { approval_id: decision.verdict.approvalId, verdict: decision.verdict.verdict }
        : null,
      note:
        [
          ...decision.notes,
          ...(decision.verdict
            ? ['whether its author may decide that approval is checked only when it is carried out']
            : []),
        ].join('; ') || null,
    },
  };
}

async function explainSource(sql: postgres.Sql, delivery: DeliveryRecord): Promise<Explained> {
  const found = await getSource(sql, delivery.source);
  if (!found) {
    return {
      would: null,
      rules: { from: 'source', note: `source ${delivery.source} was removed: it has no rules now` },
    };
  }
  const decision = decideSourceDelivery(
    found.source,
    providerFor(delivery.kind as SourceKind),
    delivery.delivery_id,
    delivery.facts as SourceFacts,
    found.rules,
  );
  const input = decision.todo?.input;
  return {
    rules: { from: 'source', note: `source ${delivery.source}'s rules, as saved now` },
    would: {
      disposition: decision.disposition,
      rule: decision.rule,
      queue: input?.queue ?? null,
      kind: input?.kind ?? null,
      title: input ? neutraliseLine(input.title) : null,
      assignee: input?.assignee ?? null,
      attributed_to: input?.attributed_to ?? null,
      write_backs: [],
      verdict: null,
      note: decision.notes.join('; ') || null,
    },
  };
}
