import { isUtf8 } from 'node:buffer';
import type { Request, RequestHandler, Response } from 'express';
import { parse as parseContentType } from 'content-type';
import type postgres from 'postgres';
import { z } from 'zod';
import { sendError } from '../../kit/http/http-error.js';
import { isUtf8Json } from '../../kit/http/is-utf8-json.js';
import { readWebhookBody } from '../../kit/http/read-webhook-body.js';
import type { Logger } from '../../platform/logger.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import {
  ALLOW_ACTION,
  DENY_ACTION,
  DENY_MODAL,
  NOTE_ACTION,
  NOTE_BLOCK,
} from './approval-message.js';
import { openSlackApp, type OpenedSlackApp } from './slack-app-store.js';
import type { SlackWork } from './slack-work.js';
import { verifySlackSignature } from './verify-slack-request.js';

/** Slack's payloads are a few kilobytes; a modal's state with a long note, a few more. */
const SLACK_BODY_MAX = 1024 * 1024;

const SlackId = z.string().regex(/^[A-Z0-9]{2,32}$/);
const TodoIdText = z
  .string()
  .regex(/^[1-9][0-9]{0,14}$/)
  .transform(Number);

// Only what is read, checked; Slack's payloads carry much more.
const BlockActions = z.object({
  type: z.literal('block_actions'),
  team: z.object({ id: SlackId }).nullish(),
  user: z.object({ id: SlackId, team_id: SlackId.optional() }),
  trigger_id: z.string().max(200).optional(),
  channel: z.object({ id: SlackId }).nullish(),
  container: z.object({ channel_id: SlackId.optional() }).passthrough().nullish(),
  actions: z
    .array(z.object({ action_id: z.string().max(255), value: z.string().max(2000).optional() }))
    .min(1),
});
const ViewSubmission = z.object({
  type: z.literal('view_submission'),
  team: z.object({ id: SlackId }).nullish(),
  user: z.object({ id: SlackId, team_id: SlackId.optional() }),
  view: z.object({
    callback_id: z.string().max(255),
    private_metadata: z.string().max(3000),
    state: z
      .object({
        values: z.record(
          z.string(),
          z.record(z.string(), z.object({ value: z.string().max(3000).nullish() }).passthrough()),
        ),
      })
      .optional(),
  }),
});
const Interaction = z.object({ type: z.string().max(100) }).passthrough();
const DenyMetadata = z.object({
  todo_id: z.number().int().positive(),
  channel: SlackId.nullable(),
});

const EventEnvelope = z.discriminatedUnion('type', [
  z.object({ type: z.literal('url_verification'), challenge: z.string().min(1).max(200) }),
  z.object({
    type: z.literal('event_callback'),
    team_id: SlackId,
    event_id: z.string().min(1).max(64),
    event: z.object({ type: z.string().max(100) }).passthrough(),
  }),
  z.object({ type: z.literal('app_rate_limited') }).passthrough(),
]);

/**
 * Slack's two endpoints. Each reads the body once within the budget of unverified bodies, checks
 * the signature and its timestamp before anything else, and the workspace (another's team id is
 * refused), then answers at once — Slack waits 3 s — and leaves the work to `work`: a press
 * decides after its acknowledgement, an event is handled after its 200.
 */
export function slackRoutes(options: {
  sql: postgres.Sql;
  box: SecretBox | null;
  log: Logger;
  work: SlackWork;
}): { interactions: RequestHandler; events: RequestHandler } {
  const { sql, box, log, work } = options;

  /** The verified body, with the app; or the request answered with why not. */
  const verified = async (
    req: Request,
    res: Response,
    contentType: 'form' | 'json',
  ): Promise<{ raw: Buffer; app: OpenedSlackApp } | null> => {
    const ok =
      contentType === 'json'
        ? isUtf8Json(req.get('content-type'))
        : isForm(req.get('content-type'));
    if (!ok) {
      sendError(
        res,
        415,
        'unsupported_media_type',
        contentType === 'json'
          ? 'an Events API request is UTF-8 application/json'
          : 'an interaction is application/x-www-form-urlencoded',
      );
      return null;
    }
    if (Number(req.get('content-length') ?? 0) > SLACK_BODY_MAX) {
      sendError(res, 413, 'too_large', 'a Slack request is at most 1 MB');
      return null;
    }
    // The one reader of webhook bodies: not compressed, within the cap however it is framed.
    const read = await readWebhookBody(req, res, { lenient: true });
    if ('refused' in read) {
      const { status, code, message } = read.refused;
      sendError(res, status, code, message);
      return null;
    }
    const { raw, body } = read;
    if (raw.length > SLACK_BODY_MAX) {
      sendError(res, 413, 'too_large', 'a Slack request is at most 1 MB');
      return null;
    }
    // Slack signs UTF-8 text; other bytes are refused for what they are, not as a bad signature.
    if (!isUtf8(raw)) {
      sendError(res, 400, 'invalid', 'the body is not UTF-8');
      return null;
    }
    const app = box ? await openSlackApp(sql, box) : null;
    if (!app) {
      sendError(
        res,
        404,
        'not_found',
        'Slack is not set up on this server (switchboard slack add)',
      );
      return null;
    }
    const check = verifySlackSignature(
      app.signingSecret,
      { signature: req.get('x-slack-signature'), timestamp: req.get('x-slack-request-timestamp') },
      raw,
    );
    if (!check.ok) {
      await body.failed();
      log.warn({ path: req.path, reason: check.reason }, 'refused a Slack request');
      sendError(res, 401, 'unauthenticated', `refused: ${check.reason}`);
      return null;
    }
    body.verified();
    return { raw, app };
  };

  const otherWorkspace = (res: Response, app: OpenedSlackApp, team: string | undefined) => {
    if (app.team_id && team === app.team_id) return false;
    sendError(
      res,
      403,
      'forbidden',
      'this request is from another Slack workspace than the one switchboard is installed in',
    );
    return true;
  };

  const interactions: RequestHandler = async (req, res) => {
    const ready = await verified(req, res, 'form');
    if (!ready) return;
    const { raw, app } = ready;
    let payload: unknown;
    try {
      const text = new URLSearchParams(raw.toString('utf8')).get('payload');
      payload = text === null ? undefined : JSON.parse(text);
    } catch {
      payload = undefined;
    }
    const shape = Interaction.safeParse(payload);
    if (!shape.success)
      return sendError(
        res,
        400,
        'invalid',
        'an interaction carries its payload as JSON in the `payload` field',
      );

    if (shape.data.type === 'block_actions') {
      const parsed = BlockActions.safeParse(payload);
      if (!parsed.success)
        return sendError(res, 400, 'invalid', 'not a block_actions payload switchboard can read');
      const press = parsed.data;
      if (otherWorkspace(res, app, press.team?.id ?? press.user.team_id)) return;
      const action = press.actions[0]!;
      const todoId = TodoIdText.safeParse(action.value);
      res.status(200).end();
      if (
        (action.action_id !== ALLOW_ACTION && action.action_id !== DENY_ACTION) ||
        !todoId.success
      )
        return;
      work.press({
        app,
        user: press.user.id,
        channel: press.channel?.id ?? press.container?.channel_id ?? null,
        todoId: todoId.data,
        verdict: action.action_id === ALLOW_ACTION ? 'allow' : 'deny',
        triggerId: press.trigger_id ?? null,
      });
      return;
    }

    if (shape.data.type === 'view_submission') {
      const parsed = ViewSubmission.safeParse(payload);
      if (!parsed.success)
        return sendError(res, 400, 'invalid', 'not a view_submission payload switchboard can read');
      const submission = parsed.data;
      if (otherWorkspace(res, app, submission.team?.id ?? submission.user.team_id)) return;
      if (submission.view.callback_id !== DENY_MODAL) return res.status(200).end();
      let metadata;
      try {
        metadata = DenyMetadata.parse(JSON.parse(submission.view.private_metadata));
      } catch {
        return sendError(res, 400, 'invalid', 'the modal does not say which approval it is for');
      }
      const note = submission.view.state?.values[NOTE_BLOCK]?.[NOTE_ACTION]?.value ?? null;
      // An empty answer closes the modal; the verdict, or why there is none, follows.
      res.status(200).end();
      work.denyWithNote({
        app,
        user: submission.user.id,
        channel: metadata.channel,
        todoId: metadata.todo_id,
        note,
      });
      return;
    }
    res.status(200).end();
  };

  const events: RequestHandler = async (req, res) => {
    const ready = await verified(req, res, 'json');
    if (!ready) return;
    const { raw, app } = ready;
    let envelope;
    try {
      envelope = EventEnvelope.parse(JSON.parse(raw.toString('utf8')));
    } catch {
      return sendError(res, 400, 'invalid', 'not an Events API request switchboard can read');
    }
    if (envelope.type === 'url_verification') return res.json({ challenge: envelope.challenge });
    if (envelope.type === 'app_rate_limited') return res.status(200).end();
    if (otherWorkspace(res, app, envelope.team_id)) return;
    // Slack sends an event again when it was not answered in time (X-Slack-Retry-Num): its
    // event_id says it is the same one, and it is handled once.
    const [fresh] = await sql`
      insert into slack_events (event_id) values (${envelope.event_id})
      on conflict (event_id) do nothing returning event_id`;
    res.status(200).end();
    if (!fresh) {
      log.debug(
        { event_id: envelope.event_id, retry: req.get('x-slack-retry-num') ?? null },
        'a Slack event seen before',
      );
      return;
    }
    work.event(app, envelope.event);
  };

  return { interactions, events };
}

function isForm(header: string | undefined): boolean {
  try {
    return parseContentType(header ?? '').type === 'application/x-www-form-urlencoded';
  } catch {
    return false;
  }
}
