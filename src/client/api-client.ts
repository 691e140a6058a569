import type {
  Deactivation as LedgerDeactivation,
  HumanDetails as LedgerHumanDetails,
  Principal as LedgerPrincipal,
} from '../contract/principal.js';
import type { TokenListing as LedgerTokenListing } from '../contract/token.js';
import type {
  HeldBack as LedgerHeldBack,
  Queue as LedgerQueue,
  QueueLimitsChange,
} from '../contract/queue.js';
import type { GitHubAppInUse } from '../contract/github-app.js';
import type { Secret as LedgerSecret } from '../contract/secret.js';
import type { SlackAppView } from '../contract/slack-app.js';
import type { Todo as LedgerTodo, TodoEvent as LedgerTodoEvent } from '../contract/todo.js';
import { ApiError } from './client-errors.js';
import { parseRetryAfter } from './retry-delay.js';
import { sendRequest } from './send-request.js';
import type {
  Delivery,
  DeliveryExplanation,
  DeliveryRecord,
  ReconcileReport,
} from '../contract/deliveries.js';

/** A ledger row as it crosses JSON: dates arrive as ISO-8601 strings. */
type Json<T> = {
  [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K];
};
export type Todo = Json<LedgerTodo>;
export type ClaimedTodo = Todo & { lease_token: string };
export type TodoEvent = Json<LedgerTodoEvent>;
export type Principal = Json<Omit<LedgerPrincipal, 'id'>>;
export type HumanDetails = Json<Omit<LedgerHumanDetails, 'id' | 'agents'>> & {
  agents: Json<LedgerHumanDetails['agents'][number]>[];
};
export type Deactivation = Omit<LedgerDeactivation, 'human' | 'approvals'> & {
  human: Principal;
  approvals: Todo[];
};
export type TokenListing = Json<LedgerTokenListing>;
export type HeldBack = Json<LedgerHeldBack>;
export type Secret = Json<LedgerSecret>;
export type Queue = Omit<Json<LedgerQueue>, 'held_back'> & { held_back: HeldBack | null };

export interface Credentials {
  url: string;
  token: string;
}

export interface ListFilter {
  queue?: string | undefined;
  state?: string | undefined;
  mine?: boolean | undefined;
  limit?: number | undefined;
  before?: number | undefined;
}

export interface NewTodo {
  queue: string;
  title: string;
  body?: string | undefined;
  kind?: string | undefined;
  key?: string | undefined;
  assignee?: string | undefined;
  /** The todo's link (its `url`): what it is about, e.g. a pull request. */
  url?: string | undefined;
}

/** A source as the API shows it (never its secret): `switchboard source …`. */
export interface Source {
  name: string;
  kind: string;
  url: string;
  owner: string;
  queues: string[];
  api_url: string | null;
  has_api_token: boolean;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface NewSource {
  kind: string;
  name: string;
  queues?: string[] | undefined;
  secret?: string | undefined;
  api_url?: string | undefined;
  api_token?: string | undefined;
}

/** One of a source's recent deliveries, as a rules file would now decide it. */
export interface RulesDryRun {
  id: number;
  delivery_id: string;
  event: string;
  action: string | null;
  received_at: string;
  was: { disposition: string; todo_id: number | null };
  would: {
    disposition: string;
    rule: string | null;
    queue: string | null;
    title: string | null;
    note: string | null;
  };
}

export interface DeliveryFilter {
  source?: string | undefined;
  limit?: number | undefined;
  before?: number | undefined;
}

export interface NewApproval {
  question: string;
  body?: string | undefined;
  about_todo_id?: number | undefined;
  ttl_seconds?: number | undefined;
  /** Claude Code's permission request id, when the question relays its prompt. */
  request_id?: string | undefined;
  /** The asker's channel session (from its event stream's `ready`): the approval ends with it. */
  channel_session?: string | undefined;
}

export interface ApiClientOptions {
  /** Who is calling, for the ledger's `via` on every change (X-Switchboard-Client). */
  client?: 'cli' | 'channel';
  /** How long a server that accepted the connection may stay silent (60 s). */
  timeoutMs?: number;
}

/** A human's Slack user, linked. */
export interface SlackLink {
  team_id: string;
  slack_user_id: string;
  linked_via: 'code' | 'sign_in';
  channel_id: string | null;
  linked_at: string;
}

export interface NewSlackApp {
  bot_token?: string | undefined;
  signing_secret: string;
  client_id?: string | undefined;
  client_secret?: string | undefined;
}

export interface NotificationPreferences {
  web_push: boolean;
  slack: boolean;
  webhook: boolean;
}

/** `human set`: each setting given is changed (`null` clears it), one left out is kept. */
export interface HumanSettings {
  backup?: string | null | undefined;
}

export interface NewHuman {
  name: string;
  github_login?: string | undefined;
  is_admin?: boolean | undefined;
}

export type ApiClient = ReturnType<typeof createApiClient>;

/**
 * The JSON API under /api/v1, one method per route, answers typed as the server sends them.
 * Requests say they come from the CLI (or the channel), so the ledger records `via: cli` on every
 * change.
 */
export function createApiClient(credentials: Credentials, options: ApiClientOptions = {}) {
  const base = credentials.url.replace(/\/+$/, '');
  const call = async <T>(
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = options.timeoutMs,
  ): Promise<T> => {
    const response = await sendRequest(new URL(`${base}/api/v1${path}`), {
      method,
      headers: {
        authorization: `Bearer ${credentials.token}`,
        'x-switchboard-client': options.client ?? 'cli',
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs,
    });
    let json: unknown;
    try {
      json = response.body ? JSON.parse(response.body) : undefined;
    } catch {
      json = undefined;
    }
    if (response.status >= 400) {
      const { error, code } = (json ?? {}) as { error?: unknown; code?: unknown };
      throw new ApiError(
        response.status,
        typeof code === 'string' ? code : `http_${response.status}`,
        typeof error === 'string' ? error : `${method} ${path} answered HTTP ${response.status}`,
        parseRetryAfter(response.headers['retry-after']),
      );
    }
    if (json === undefined) {
      throw new Error(`${method} ${path} answered HTTP ${response.status} without JSON`);
    }
    return json as T;
  };
  const todo = (id: number) => `/todos/${encodeURIComponent(id)}`;
  const post = <T>(path: string, body: unknown = {}) => call<T>('POST', path, body);

  return {
    url: base,
    whoami: () => call<{ principal: Principal }>('GET', '/whoami'),
    signInLink: () => post<{ url: string; expires_at: string }>('/web/sign-in-links'),

    listTodos(filter: ListFilter = {}) {
      const query = new URLSearchParams();
      for (const [key, value] of Object.entries(filter)) {
        if (value !== undefined && value !== false) query.set(key, String(value));
      }
      const search = query.size ? `?${query.toString()}` : '';
      return call<{ todos: Todo[] }>('GET', `/todos${search}`);
    },
    getTodo: (id: number) =>
      call<{ todo: Todo; history: TodoEvent[]; held_back?: HeldBack | null }>('GET', todo(id)),
    createTodo: (input: NewTodo) => post<{ todo: Todo; created: boolean }>('/todos', input),
    claimTodo: (id: number, leaseSeconds?: number) =>
      post<{ todo: ClaimedTodo }>(`${todo(id)}/claim`, { lease_seconds: leaseSeconds }),
    /** `held_back`: the queue's limits hold its todos back; claim again at its `next_at`. */
    claimNext: (queue: string, leaseSeconds?: number) =>
      post<{ todo: ClaimedTodo | null; held_back?: HeldBack }>(
        `/queues/${encodeURIComponent(queue)}/claim`,
        { lease_seconds: leaseSeconds },
      ),
    heartbeat: (id: number, leaseToken: string, leaseSeconds?: number) =>
      post<{ todo: Todo }>(`${todo(id)}/heartbeat`, {
        lease_token: leaseToken,
        lease_seconds: leaseSeconds,
      }),
    complete: (id: number, leaseToken: string, report: { summary?: string; result?: unknown }) =>
      post<{ todo: Todo }>(`${todo(id)}/complete`, { lease_token: leaseToken, ...report }),
    fail: (id: number, leaseToken: string, reason?: string) =>
      post<{ todo: Todo }>(`${todo(id)}/fail`, { lease_token: leaseToken, reason }),
    release: (id: number, leaseToken: string) =>
      post<{ todo: Todo }>(`${todo(id)}/release`, { lease_token: leaseToken }),
    approve: (id: number, note?: string) => post<{ todo: Todo }>(`${todo(id)}/approve`, { note }),
    deny: (id: number, note?: string) => post<{ todo: Todo }>(`${todo(id)}/deny`, { note }),
    reply: (id: number, text: string) =>
      post<{ todo: Todo; text: string }>(`${todo(id)}/reply`, { text }),
    cancel: (id: number, reason?: string) => post<{ todo: Todo }>(`${todo(id)}/cancel`, { reason }),
    releaseQuarantine: (id: number) => post<{ todo: Todo }>(`${todo(id)}/release-quarantine`),
    requestApproval: (input: NewApproval) => post<{ todo: Todo }>('/approvals', input),
    /** A credential withheld from a todo's text; the fetch is recorded in the todo's history. */
    showSecret: (id: string) =>
      call<{ secret: Secret }>('GET', `/secrets/${encodeURIComponent(id)}`),

    listQueues: () => call<{ queues: Queue[] }>('GET', '/queues'),
    getQueue: (queue: string) =>
      call<{ queue: Queue }>('GET', `/queues/${encodeURIComponent(queue)}`),
    setQueueLimits: (queue: string, change: QueueLimitsChange) =>
      call<{ queue: Queue }>('PATCH', `/queues/${encodeURIComponent(queue)}`, change),

    listAgents: () => call<{ agents: Principal[] }>('GET', '/agents'),
    addAgent: (name: string, queues: string[]) =>
      post<{ agent: Principal; token: string }>('/agents', { name, queues }),
    revokeAgent: (name: string) =>
      post<{ agent: Principal }>(`/agents/${encodeURIComponent(name)}/revoke`),

    listSources: () => call<{ sources: Source[] }>('GET', '/sources'),
    addSource: (input: NewSource) =>
      post<{ source: Source; secret: string | null }>('/sources', input),
    rotateSource: (name: string, input: { secret?: string; grace_seconds?: number }) =>
      post<{ source: Source; secret: string | null }>(
        `/sources/${encodeURIComponent(name)}/rotate`,
        input,
      ),
    removeSource: (name: string) =>
      call<{ removed: string }>('DELETE', `/sources/${encodeURIComponent(name)}`),
    setSourceRules: (name: string, rules: string, dryRun: boolean) =>
      call<{ source: Source; rules: unknown; dry_run: RulesDryRun[]; saved: boolean }>(
        'PUT',
        `/sources/${encodeURIComponent(name)}/rules`,
        { rules, dry_run: dryRun },
      ),

    listDeliveries(filter: DeliveryFilter = {}) {
      const query = new URLSearchParams();
      for (const [key, value] of Object.entries(filter)) {
        if (value !== undefined) query.set(key, String(value));
      }
      const search = query.size ? `?${query.toString()}` : '';
      return call<{ deliveries: Delivery[] }>('GET', `/deliveries${search}`);
    },
    getDelivery: (id: number) =>
      call<{ delivery: DeliveryRecord }>('GET', `/deliveries/${encodeURIComponent(id)}`),
    explainDelivery: (id: number) =>
      call<DeliveryExplanation>('GET', `/deliveries/${encodeURIComponent(id)}/explain`),
    // A pass may wait a minute for another process's, then pace its requests to GitHub.
    reconcileDeliveries: (sinceSeconds?: number) =>
      call<{ reconcile: ReconcileReport }>(
        'POST',
        '/deliveries/reconcile',
        { since_seconds: sinceSeconds },
        5 * 60_000,
      ),

    /** A one-time link to the console's GitHub App setup page (admins). */
    githubSetup: (org?: string) =>
      post<{ url: string; expires_at: string; requested_at: string }>(
        '/github/setup',
        org ? { org } : {},
      ),
    /** The App in use; with `wait`, up to that many seconds for one set up after `after`. */
    githubApp(options: { wait?: number; after?: string } = {}) {
      const query = new URLSearchParams();
      if (options.wait) query.set('wait', String(options.wait));
      if (options.after) query.set('after', options.after);
      const search = query.size ? `?${query.toString()}` : '';
      return call<{ app: GitHubAppInUse | null }>(
        'GET',
        `/github/app${search}`,
        undefined,
        ((options.wait ?? 0) + 30) * 1000,
      );
    },

    listHumans: () => call<{ humans: Principal[] }>('GET', '/humans'),
    addHuman: (input: NewHuman) => post<{ human: Principal; token: string }>('/humans', input),
    showHuman: (name: string) =>
      call<{ human: HumanDetails }>('GET', `/humans/${encodeURIComponent(name)}`),
    setHuman: (name: string, settings: HumanSettings) =>
      call<{ human: HumanDetails }>('PATCH', `/humans/${encodeURIComponent(name)}`, settings),
    deactivateHuman: (name: string) =>
      post<Deactivation>(`/humans/${encodeURIComponent(name)}/deactivate`),
    reactivateHuman: (name: string) =>
      post<{ human: Principal; token: string }>(`/humans/${encodeURIComponent(name)}/reactivate`),

    listTokens: (filter: { human?: string | undefined; all?: boolean | undefined } = {}) => {
      const query = new URLSearchParams();
      if (filter.human !== undefined) query.set('human', filter.human);
      if (filter.all) query.set('all', 'true');
      const search = query.size > 0 ? `?${query.toString()}` : '';
      return call<{ tokens: TokenListing[] }>('GET', `/tokens${search}`);
    },
    revokeToken: (id: number) => post<{ token: TokenListing }>(`/tokens/${id}/revoke`),

    setWebhook: (url: string) => call<{ url: string; secret: string }>('PUT', '/webhook', { url }),
    removeWebhook: () => call<{ removed: boolean }>('DELETE', '/webhook'),

    getSlack: () =>
      call<{
        app: SlackAppView | null;
        link: SlackLink | null;
        events_url: string;
        interactions_url: string;
      }>('GET', '/slack'),
    slackManifest: () => call<{ manifest: string }>('GET', '/slack/manifest'),
    // auth.test is asked of Slack before the app is saved.
    addSlackApp: (input: NewSlackApp) =>
      call<{ app: SlackAppView }>('PUT', '/slack/app', input, 60_000),
    removeSlackApp: () => call<{ removed: boolean }>('DELETE', '/slack/app'),
    slackLinkCode: () =>
      post<{ code: string; expires_at: string; bot_user_id: string | null }>('/slack/link-code'),
    setSlackChannel: (channel: string | null) =>
      call<{ link: SlackLink }>('PUT', '/slack/link', { channel }),
    unlinkSlack: () => call<{ unlinked: boolean }>('DELETE', '/slack/link'),
    getNotifications: () => call<{ preferences: NotificationPreferences }>('GET', '/notifications'),
    setNotifications: (change: Partial<NotificationPreferences>) =>
      call<{ preferences: NotificationPreferences }>('PUT', '/notifications', change),
  };
}
