import { z } from 'zod';
import { allowlistRules, rule, ruleOn } from '../rule-schema.js';

/** RFC 6901: `/data/title`, `/user/login`, `/items/0/name`. */
const Pointer = z
  .string()
  .regex(/^(\/[^/]*)+$/, 'must be a JSON pointer such as /data/title')
  .max(200)
  .nullable();

export const standardWebhooksRules = allowlistRules(
  {
    event: z.strictObject({
      ...rule,
      /** The event types (the payload's `type`) that make todos; empty: every one. */
      types: z.array(z.string().min(1).max(100)),
      /** Where the todo's title is; null (or nothing there): the event type. */
      title: Pointer,
      body: Pointer,
      url: Pointer,
      /** Who caused it; null: the source's owner, the human who added it. */
      actor: Pointer,
    }),
  },
  (queue) => ({
    event: { ...ruleOn(queue), types: [], title: null, body: null, url: null, actor: null },
  }),
);

export type StandardWebhooksRules = ReturnType<typeof standardWebhooksRules.defaults>;
