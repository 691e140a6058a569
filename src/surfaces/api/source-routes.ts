import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { adminOnly } from '../../kit/http/admin-only.js';
import { actorOf } from '../../kit/http/authenticate.js';
import { HttpError } from '../../kit/http/http-error.js';
import type { PublicAddress } from '../../kit/http/public-address.js';
import { recentSourceDeliveries } from '../../data/deliveries/read-deliveries.js';
import { invalid, notFound } from '../../data/index.js';
import type { OutboundPolicy } from '../../platform/egress/egress-policy.js';
import { providerFor } from '../../providers/by-kind/provider-for.js';
import { decideDelivery } from '../../providers/decide-delivery.js';
import type { Facts } from '../../providers/provider.js';
import { parseRules, RulesError } from '../../providers/rule-schema.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import { SOURCE_KINDS } from '../../contract/source-kinds.js';
import { defaultSourceRules, sourceRules } from '../../providers/by-kind/source-rules.js';
import {
  addSource,
  getSource,
  listSources,
  removeSource,
  rotateSource,
  saveSourceRules,
  type SourceView,
} from '../../data/sources/source-store.js';

const Name = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "must be lowercase letters, digits, '.', '_' or '-'");
const Queue = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "must be lowercase letters, digits, '.', '_' or '-'");
const AddBody = z.strictObject({
  kind: z.enum(SOURCE_KINDS),
  // The GitHub App's deliveries and write-backs are recorded under `github`.
  name: Name.refine((name) => name !== 'github', 'github is the GitHub App’s own name'),
  queues: z.array(Queue).min(1).max(20).optional(),
  secret: z.string().min(1).max(512).optional(),
  api_url: z.string().min(1).max(2048).optional(),
  api_token: z.string().min(1).max(4096).optional(),
});
const RotateBody = z.strictObject({
  secret: z.string().min(1).max(512).optional(),
  /** How long the old secret keeps working (default a day; 0 ends it now). */
  grace_seconds: z
    .number()
    .int()
    .min(0)
    .max(30 * 86_400)
    .default(86_400),
});
const RulesBody = z.strictObject({
  /** The rules file's text (YAML). */
  rules: z.string().max(65_536),
  /** Only show what the rules would do; save nothing. */
  dry_run: z.boolean().default(false),
});

/** How many recent deliveries a rules dry run replays. */
export const DRY_RUN_DELIVERIES = 50;

/**
 * The admin's API for sources, under /api/v1 (what `switchboard source …` calls). A secret is in
 * an answer only when switchboard made it — once, when it was made — never afterwards.
 */
export function sourceRoutes(
  sql: postgres.Sql,
  box: SecretBox | null,
  outbound: OutboundPolicy,
  address: PublicAddress,
): Router {
  const router = Router({ caseSensitive: true });
  /** Where the provider posts: this server at its public address (never the request's Host). */
  const shown = (source: SourceView) => ({
    ...source,
    url: `${address.url()}/api/sources/${source.name}/webhooks`,
  });
  const sealer = () => {
    if (!box) {
      throw new HttpError(
        503,
        'sources_disabled',
        'sources are off: set SWITCHBOARD_SECRET_KEY on this server (it seals their secrets)',
      );
    }
    return box;
  };

  router.get('/sources', adminOnly('list sources'), async (_req, res) => {
    res.json({ sources: (await listSources(sql)).map((source) => shown(source)) });
  });

  router.post('/sources', adminOnly('add sources'), async (req, res) => {
    const body = AddBody.parse(req.body ?? {});
    const actor = actorOf(res);
    const refused = body.api_url === undefined ? null : outbound.urlRefusal(body.api_url);
    if (refused) throw invalid(`the API URL ${refused}`);
    const { source, secret } = await addSource(sql, sealer(), {
      name: body.name,
      kind: body.kind,
      owner: actor.name,
      queues: body.queues,
      secret: body.secret,
      apiUrl: body.api_url,
      apiToken: body.api_token,
      defaultRules: defaultSourceRules(body.kind),
    });
    res.status(201).json({ source: shown(source), secret });
  });

  router.get('/sources/:name', adminOnly('read sources'), async (req, res) => {
    const name = Name.parse(req.params.name);
    const found = await getSource(sql, name);
    if (!found) throw notFound(`no source named ${name}`);
    res.json({
      source: shown(found.source),
      rules: sourceRules({ ...found.source, rules: found.rules }),
    });
  });

  router.post('/sources/:name/rotate', adminOnly('rotate source secrets'), async (req, res) => {
    const body = RotateBody.parse(req.body ?? {});
    const { source, secret } = await rotateSource(sql, sealer(), Name.parse(req.params.name), {
      secret: body.secret,
      graceSeconds: body.grace_seconds,
    });
    res.json({ source: shown(source), secret });
  });

  router.delete('/sources/:name', adminOnly('remove sources'), async (req, res) => {
    const name = Name.parse(req.params.name);
    await removeSource(sql, name);
    res.json({ removed: name });
  });

  router.put('/sources/:name/rules', adminOnly('change source rules'), async (req, res) => {
    const body = RulesBody.parse(req.body ?? {});
    const name = Name.parse(req.params.name);
    const found = await getSource(sql, name);
    if (!found) throw notFound(`no source named ${name}`);
    const { source } = found;
    let rules;
    try {
      rules = parseRules(providerFor(source.kind).rules, source.queues, body.rules);
    } catch (error) {
      if (error instanceof RulesError) throw invalid(`the rules are not valid: ${error.message}`);
      throw error;
    }
    const recent = await recentSourceDeliveries(sql, name, DRY_RUN_DELIVERIES);
    const provider = providerFor(source.kind);
    const dryRun = recent.map((delivery) => {
      const would = decideDelivery(
        provider,
        {
          source: source.name,
          owner: source.owner,
          deliveryId: delivery.delivery_id,
          // Its own rows: the facts a provider read, as it wrote them.
          facts: delivery.facts as Facts,
        },
        rules,
        { writeBack: false },
      );
      return {
        id: delivery.id,
        delivery_id: delivery.delivery_id,
        event: delivery.event,
        action: delivery.action,
        received_at: delivery.received_at,
        was: { disposition: delivery.disposition, todo_id: delivery.todo_id },
        would: {
          disposition: would.disposition,
          rule: would.rule,
          queue: would.todo?.input.queue ?? null,
          title: would.todo?.input.title ?? null,
          note: would.notes.join('; ') || null,
        },
      };
    });
    if (!body.dry_run) await saveSourceRules(sql, name, rules);
    res.json({ source: shown(source), rules, dry_run: dryRun, saved: !body.dry_run });
  });

  return router;
}
