import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type postgres from 'postgres';
import { sendError } from '../http/http-error.js';
import { isUtf8Json } from '../http/is-utf8-json.js';
import type { Metrics } from '../http/metrics.js';
import { webhookBodyOf } from '../http/webhook-body-budget.js';
import type { Logger } from '../logger.js';
import { TimeoutError, withTimeout } from '../providers/github/with-timeout.js';
import { decideSourceDelivery, type SourceDecision } from './decide-source-delivery.js';
import { providerFor } from './provider-for.js';
import { recordSourceDelivery } from './record-source-delivery.js';
import type { SourceKind } from './source-kinds.js';
import type { SecretBox } from './secret-box.js';
import { missingHeader, type SourceFacts } from './source-provider.js';
import { openSource } from './source-store.js';

export interface IntakeOptions {
  sql: postgres.Sql;
  log: Logger;
  metrics: Metrics;
  /** Null: no server key, so no source can be opened (every delivery is refused, 503). */
  box: SecretBox | null;
  /** A delivery is committed or refused within this. */
  timeoutMs: number;
  /** The same signed body under another delivery id within this is a replay. */
  replayWindowMs: number;
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const DELIVERY_ID = /^[\x21-\x7e]{1,128}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * `POST /api/sources/:name/webhooks`: every source's deliveries, through the same steps in order —
 * the raw body verified by the source's provider in constant time before anything is parsed
 * (401, nothing stored, when it does not match), its delivery id, its facts, the rules and trust
 * (decideSourceDelivery), then one transaction (recordSourceDelivery) before the 200.
 *
 * GitLab disables a hook that keeps failing, 4xx answers included, so for a GitLab source only a
 * failed authentication is a 4xx: anything else it sends (a header it always sends missing
 * included) is answered 200 and recorded `unreadable`, with the reason in its note — a record
 * that holds neither its delivery id nor its body against the corrected delivery.
 */
export function receiveSourceDelivery(options: IntakeOptions) {
  const { sql, log, metrics } = options;
  return async (req: Request, res: Response): Promise<void> => {
    const name = String(req.params.name ?? '');
    const refuse = (status: number, code: string, message: string) => {
      // The reason only: never the payload, a signature or a secret.
      log.warn({ source: name.slice(0, 64), status, reason: message }, 'source delivery refused');
      sendError(res, status, code, message);
    };
    if (!options.box) {
      return refuse(
        503,
        'sources_disabled',
        'sources are off: set SWITCHBOARD_SECRET_KEY on this server (it seals their secrets)',
      );
    }
    const source = NAME.test(name) ? await openSource(sql, options.box, name) : null;
    if (!source) return refuse(404, 'not_found', `no source named ${name.slice(0, 64)}`);
    const provider = providerFor(source.kind);
    const lenient = source.kind === 'gitlab';
    if (!lenient && !isUtf8Json(req.get('content-type'))) {
      return refuse(
        415,
        'unsupported_media_type',
        "a webhook body must be UTF-8 application/json (set the webhook's content type to JSON)",
      );
    }
    // A body declared over the cap was refused before this, unread (webhook-body-budget.ts).
    const body = webhookBodyOf(res);
    let raw: Buffer;
    try {
      raw = await body.read();
    } catch (error) {
      if ((error as { type?: unknown }).type === 'entity.too.large') {
        return refuse(413, 'too_large', 'webhook payload is larger than 25 MB');
      }
      return refuse(400, 'invalid', 'the body could not be read');
    }

    // 1. Verify the exact bytes, before anything is parsed.
    const verified = provider.verify(raw, req.headers, source.secrets);
    if (!verified.ok) {
      body.failed();
      return verified.malformed
        ? refuse(400, 'invalid', verified.reason)
        : refuse(401, 'unauthenticated', verified.reason);
    }
    body.verified();
    const bodySha256 = createHash('sha256').update(raw).digest();
    // Read without a header its provider always sends (the event, above all), a delivery would
    // be some other event: refused, never recorded, so the corrected one is not taken for it.
    const missing = missingHeader(req.headers, provider.requiredHeaders);
    const absent =
      missing &&
      `required header missing: ${missing} (${PROVIDER_NAME[source.kind]} sends it with every delivery)`;
    if (absent && !lenient) return refuse(400, 'invalid', absent);

    // 2–3. Parse, the delivery id, the facts.
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
    if (unreadable && !lenient) return refuse(400, 'invalid', unreadable);
    unreadable ??= absent;
    const headerId = provider.deliveryId(req.headers, payload ?? {});
    // A GitLab before 15 sends no id of the delivery: the body's hash stands for it.
    const deliveryId = headerId ?? (lenient ? `sha256:${bodySha256.toString('hex')}` : null);
    if (deliveryId === null || !DELIVERY_ID.test(deliveryId)) {
      return refuse(
        400,
        'invalid',
        deliveryId === null
          ? 'the delivery has no id'
          : 'the delivery id must be 1 to 128 printable characters',
      );
    }
    let facts: SourceFacts;
    let decision: SourceDecision;
    if (payload && !unreadable) {
      facts = provider.readFacts(req.headers, payload);
      decision = decideSourceDelivery(source, provider, deliveryId, facts, source.rules);
    } else {
      // What it says, where it could be read: the record shows whose delivery it was.
      facts = provider.readFacts(req.headers, payload ?? {});
      decision = { disposition: 'unreadable', notes: [unreadable!], rule: null };
    }

    // 4–6 were weighed in decideSourceDelivery; now one transaction, within the budget.
    const deadline = Date.now() + options.timeoutMs;
    const fields = { source: source.name, kind: source.kind, delivery_id: deliveryId };
    try {
      const recorded = await withTimeout(
        recordSourceDelivery(
          sql,
          { source: source.name, kind: source.kind, deliveryId, facts, bodySha256, decision },
          { deadline, replayWindowMs: options.replayWindowMs },
        ),
        options.timeoutMs,
      );
      metrics.providerDeliveries.inc({
        provider: source.kind,
        source: source.name,
        disposition: recorded.disposition,
      });
      log.info(
        {
          ...fields,
          event: facts.event,
          action: facts.action,
          disposition: recorded.disposition,
          todo_id: recorded.todoId,
          note: recorded.note,
        },
        'source delivery recorded',
      );
      res.json({
        delivery: {
          id: recorded.id,
          disposition: recorded.disposition,
          todo_id: recorded.todoId,
          note: recorded.note,
        },
      });
    } catch (error) {
      metrics.providerDeliveries.inc({
        provider: source.kind,
        source: source.name,
        disposition: 'not_recorded',
      });
      log.error({ ...fields, err: error }, 'source delivery not recorded');
      const slow = error instanceof TimeoutError;
      sendError(
        res,
        slow ? 503 : 500,
        'not_recorded',
        slow
          ? 'the delivery was not recorded in time (the database is slow or unreachable); nothing was stored, so redeliver it later'
          : 'the delivery could not be recorded; nothing was stored, so redeliver it later (the server log has the details)',
      );
    }
  };
}

const PROVIDER_NAME: Record<SourceKind, string> = {
  gitea: 'Gitea',
  forgejo: 'Forgejo',
  gitlab: 'GitLab',
  linear: 'Linear',
  'standard-webhooks': 'a Standard Webhooks sender',
};
