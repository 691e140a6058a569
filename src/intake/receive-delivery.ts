import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type postgres from 'postgres';
import { isDatabaseUnavailable } from '../platform/db/is-database-unavailable.js';
import { sendError } from '../kit/http/http-error.js';
import { isUtf8Json } from '../kit/http/is-utf8-json.js';
import type { Metrics } from '../kit/http/metrics.js';
import type { TodoService } from '../todos/create-todo-service.js';
import type { Logger } from '../platform/logger.js';
import { providerFor } from '../providers/by-kind/provider-for.js';
import { decideDelivery, type Decision } from '../providers/decide-delivery.js';
import {
  missingHeader,
  type Facts,
  type Provider,
  type ProviderClients,
} from '../providers/provider.js';
import { TimeoutError, withTimeout } from '../platform/with-timeout.js';
import type { SecretBox } from '../platform/secrets/secret-box.js';
import { isDeliveryRecorded } from '../data/deliveries/is-delivery-recorded.js';
import { openSource } from '../data/sources/source-store.js';
import { sourceRules } from '../providers/by-kind/source-rules.js';
import { readWebhookBody } from '../kit/http/read-webhook-body.js';
import { recordDelivery, type RecordedDelivery } from './record-delivery.js';

export interface IntakeTuning {
  /** A delivery is committed or refused within this (GitHub gives up at 10 s). */
  ingestTimeoutMs: number;
  /** The part of it a repository's rules may take to read (GitHub's `.github/switchboard.yml`). */
  configTimeoutMs: number;
  /** The same signed body under another delivery id within this is a replay (0: off). */
  replayWindowMs: number;
}

export const DEFAULT_INTAKE_TUNING: IntakeTuning = {
  ingestTimeoutMs: 5000,
  configTimeoutMs: 2500,
  // A provider's own redelivery keeps the delivery id; only a replay changes it. A day covers
  // any capture an attacker could still hope to pass off as fresh.
  replayWindowMs: 24 * 3_600_000,
};

export interface IntakeOptions {
  sql: postgres.Sql;
  log: Logger;
  metrics: Metrics;
  clients: ProviderClients;
  /**
   * The App's webhook secret as it is now (WEBHOOK_SECRET, or the App `github setup` stored):
   * without one every GitHub delivery is refused (503).
   */
  githubSecret: () => string | undefined;
  /**
   * Opens the sources' secrets; null (no server key): every source's delivery is refused (503).
   */
  box: SecretBox | null;
  /**
   * Makes a delivery's todo or records its verdict, in the delivery's transaction: it announces
   * new todos' wakes after the commit, and seals the credentials withheld from them (with the
   * server's key; without one they are withheld without being kept).
   */
  todos: TodoService;
  /** Write-backs were queued: the outbox looks now rather than at its next poll. */
  kick?: (() => void) | undefined;
  tuning: { github: IntakeTuning; sources: IntakeTuning };
}

export interface Intake {
  /** POST /api/github/webhooks: the GitHub App's deliveries. */
  github: RequestHandler;
  /** POST /api/sources/:name/webhooks: every configured source's. */
  sources: RequestHandler;
}

/** Where a delivery came in: the App, or a source of the registry, with its secrets and rules. */
interface Origin {
  /** `github`, or the source's name. */
  name: string;
  provider: Provider;
  secrets: string[];
  /** The human who added the source. */
  owner: string | null;
  /** A source's saved rules; null: the provider's (GitHub's: the repository's file). */
  rules: unknown;
  tuning: IntakeTuning;
}

/** A refusal: the status and `{error, code}` to answer, nothing stored. */
class Refused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const SOURCE_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const DELIVERY_ID = /^[\x21-\x7e]{1,128}$/;
// Strict: bytes that are not UTF-8 are refused, not replaced (what is stored is what was signed).
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The one intake: every provider's deliveries through the same steps, in order — the body read
 * once (read-webhook-body.ts); verified by its provider in constant time before anything is
 * parsed; the headers it always sends; parsed as strict UTF-8 JSON; its delivery id; its facts;
 * its rules (a source's as saved, GitHub's from the repository), then trust (decideDelivery);
 * and one transaction (recordDelivery) before the 200. One status per fault, whichever provider:
 *
 *   no secret or key configured 503 · unknown source 404 · not UTF-8 JSON, or compressed 415
 *   too large 413 · bad or missing signature 401 · a header it always sends missing, or not as
 *   it sends it 400 (naming it) · not UTF-8, not JSON, not an object, no usable delivery id 400
 *   not recorded in time (or the database away) 503 · any other recording failure 500
 *
 * A lenient provider (GitLab, which disables a hook that keeps failing) is refused, once its body
 * is read, only for a failed authentication: anything else it sends is answered 200 and recorded
 * `unreadable`, with the reason in its note — a record that holds neither its delivery id nor its
 * body against the corrected delivery.
 */
export function createIntake(options: IntakeOptions): Intake {
  const { sql, log } = options;

  const github = (): Origin => {
    const secret = options.githubSecret();
    if (!secret) {
      throw new Refused(
        503,
        'webhooks_disabled',
        'webhooks are off: WEBHOOK_SECRET is not set on this server',
      );
    }
    return {
      name: 'github',
      provider: providerFor('github'),
      secrets: [secret],
      owner: null,
      rules: null,
      tuning: options.tuning.github,
    };
  };

  const source = async (req: Request): Promise<Origin> => {
    const name = String(req.params.name ?? '');
    if (!options.box) {
      throw new Refused(
        503,
        'sources_disabled',
        'sources are off: set SWITCHBOARD_SECRET_KEY on this server (it seals their secrets)',
      );
    }
    const opened = SOURCE_NAME.test(name) ? await openSource(sql, options.box, name) : null;
    if (!opened) throw new Refused(404, 'not_found', `no source named ${name.slice(0, 64)}`);
    return {
      name: opened.name,
      provider: providerFor(opened.kind),
      secrets: opened.secrets,
      owner: opened.owner,
      rules: sourceRules(opened),
      tuning: options.tuning.sources,
    };
  };

  const handle =
    (open: (req: Request) => Origin | Promise<Origin>): RequestHandler =>
    (req, res, next) => {
      receive(req, res, open).catch(next);
    };

  async function receive(
    req: Request,
    res: Response,
    open: (req: Request) => Origin | Promise<Origin>,
  ): Promise<void> {
    // GitHub's log lines have always said `github delivery …`; every source's `source delivery …`.
    let who = req.params.name === undefined ? 'github' : 'source';
    const refuse = (status: number, code: string, message: string, name?: string) => {
      // The reason only: never the payload, a signature or a secret.
      log.warn({ source: name?.slice(0, 64), status, reason: message }, `${who} delivery refused`);
      sendError(res, status, code, message);
    };
    let origin: Origin;
    try {
      origin = await open(req);
    } catch (error) {
      if (error instanceof Refused) return refuse(error.status, error.code, error.message);
      throw error;
    }
    const { provider } = origin;
    who = provider.kind === 'github' ? 'github' : 'source';
    const lenient = provider.lenient === true;
    const read = await readWebhookBody(req, res, { lenient });
    if ('refused' in read) {
      const { status, code, message } = read.refused;
      return refuse(status, code, message, origin.name);
    }
    const { raw, body } = read;

    // 1. The exact bytes, verified before anything is parsed.
    const verified = await provider.verify(raw, req.headers, origin.secrets);
    if (!verified.ok) {
      await body.failed();
      return verified.malformed
        ? refuse(400, 'invalid', verified.reason, origin.name)
        : refuse(401, 'unauthenticated', verified.reason, origin.name);
    }
    body.verified();
    const bodySha256 = createHash('sha256').update(raw).digest();
    // Read without a header its provider always sends (the event, above all), a delivery would
    // be some other event: refused, never recorded, so the corrected one is not taken for it.
    const missing = missingHeader(req.headers, provider.requiredHeaders);
    const headerProblem = missing
      ? `required header missing: ${missing} (${provider.name} sends it with every delivery)`
      : (provider.checkHeaders?.(req.headers) ?? null);
    if (headerProblem && !lenient) return refuse(400, 'invalid', headerProblem, origin.name);

    // 2. Parsed, strictly.
    let payload: Record<string, unknown> | null = null;
    let unreadable: string | null =
      lenient && !isUtf8Json(req.get('content-type'))
        ? 'the body is not UTF-8 application/json'
        : null;
    if (!unreadable) {
      try {
        const parsed: unknown = JSON.parse(utf8.decode(raw));
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
          payload = parsed as Record<string, unknown>;
        } else unreadable = 'the payload is not a JSON object';
      } catch (error) {
        unreadable =
          error instanceof SyntaxError
            ? 'the body is not valid JSON'
            : 'the body is not valid UTF-8';
      }
    }
    if (unreadable && !lenient) return refuse(400, 'invalid', unreadable, origin.name);
    unreadable ??= headerProblem;

    // 3. Its delivery id: a retry repeats it. A GitLab before 15 sends none: the body's hash
    // stands for it.
    const sent = provider.deliveryId(req.headers, payload ?? {});
    const deliveryId = sent ?? (lenient ? `sha256:${bodySha256.toString('hex')}` : null);
    if (deliveryId === null || !DELIVERY_ID.test(deliveryId)) {
      const named = provider.deliveryIdName ?? 'the delivery id';
      return refuse(
        400,
        'invalid',
        deliveryId === null
          ? 'the delivery has no id'
          : `${named} must be 1 to 128 printable characters`,
        origin.name,
      );
    }

    // 4. Its facts — what it says, even where it could not be read: the record shows whose it was.
    const facts = provider.readFacts(req.headers, payload ?? {});
    const deadline = Date.now() + origin.tuning.ingestTimeoutMs;
    const count = (disposition: string) => {
      options.metrics.providerDeliveries.inc({
        provider: provider.kind,
        source: origin.name,
        disposition,
      });
      // GitHub's own counter, by event, which dashboards read since before there were sources.
      if (provider.kind === 'github')
        options.metrics.deliveries.inc({ event: facts.event, disposition });
    };
    const fields = {
      source: origin.name,
      kind: provider.kind,
      delivery_id: deliveryId,
      event: facts.event,
      action: facts.action,
    };
    let recorded: RecordedDelivery;
    try {
      // 5. Its rules, then trust; 6. one transaction, within the budget.
      const decision: Decision = unreadable
        ? { disposition: 'unreadable', notes: [unreadable], rule: null }
        : await decide(origin, deliveryId, facts, deadline);
      recorded = await withTimeout(
        recordDelivery({ provider, source: origin.name, deliveryId, facts, bodySha256 }, decision, {
          deadline,
          replayWindowMs: origin.tuning.replayWindowMs,
          todos: options.todos,
        }),
        deadline - Date.now(),
      );
    } catch (error) {
      count('not_recorded');
      // The error's own fields (code, message, the constraint) help; postgres.js keeps the
      // statement and its parameters out of them.
      log.error({ ...fields, err: error }, `${who} delivery not recorded`);
      const unavailable = error instanceof TimeoutError || isDatabaseUnavailable(error);
      return sendError(
        res,
        unavailable ? 503 : 500,
        'not_recorded',
        unavailable
          ? 'the delivery was not recorded in time (the database is slow or unreachable); nothing was stored, so redeliver it later'
          : 'the delivery could not be recorded; nothing was stored, so redeliver it later (the server log has the details)',
      );
    }
    count(recorded.disposition);
    if (recorded.queuedWriteBacks) options.kick?.();
    log.info(
      {
        ...fields,
        subject: provider.columns(facts).subject,
        disposition: recorded.disposition,
        todo_id: recorded.todoId,
        note: recorded.note,
      },
      `${who} delivery recorded`,
    );
    res.json({
      delivery: {
        id: recorded.id,
        disposition: recorded.disposition,
        todo_id: recorded.todoId,
        note: recorded.note,
      },
    });
  }

  /**
   * The rules, then trust. A source's rules were saved with it; GitHub's are the repository's
   * `.github/switchboard.yml`, read through the App only for an event a rule could want, and
   * never for a redelivery.
   */
  async function decide(
    origin: Origin,
    deliveryId: string,
    facts: Facts,
    deadline: number,
  ): Promise<Decision> {
    const { provider } = origin;
    let rules = origin.rules;
    let warning: string | null = null;
    if (rules === null) {
      rules = provider.rules.defaults('');
      const repository = provider.repositoryRules;
      if (
        repository &&
        options.clients.github &&
        repository.mayMatch(facts) &&
        !(await isRecorded(origin.name, deliveryId, deadline))
      ) {
        const read = await repository.read(
          options.clients,
          facts,
          Math.min(origin.tuning.configTimeoutMs, deadline - Date.now()),
        );
        rules = read.rules;
        warning = read.warning;
      }
    }
    if (warning) log.warn({ source: origin.name, delivery_id: deliveryId }, warning);
    return decideDelivery(
      provider,
      { source: origin.name, owner: origin.owner, deliveryId, facts },
      rules,
      { writeBack: options.clients.github !== null, warning },
    );
  }

  function isRecorded(source: string, deliveryId: string, deadline: number) {
    return withTimeout(isDeliveryRecorded(sql, source, deliveryId), deadline - Date.now());
  }

  return { github: handle(github), sources: handle(source) };
}
