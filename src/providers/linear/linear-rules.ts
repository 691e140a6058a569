import { z } from 'zod';
import { allowlistRules, Mention, rule, ruleOn } from '../rule-schema.js';

export const linearRules = allowlistRules(
  {
    /** Only issues assigned to these (Linear users' emails or names); none by default. */
    issue_assigned: z.strictObject({ ...rule, assignees: z.array(z.string().min(1).max(255)) }),
    issue_labeled: z.strictObject({ ...rule, label: z.string().min(1).max(255) }),
    comment: z.strictObject({ ...rule, mention: Mention }),
  },
  (queue) => ({
    issue_assigned: { ...ruleOn(queue), assignees: [] },
    issue_labeled: { ...ruleOn(queue), label: 'switchboard' },
    comment: { ...ruleOn(queue), mention: '@switchboard' },
  }),
);

export type LinearRules = ReturnType<typeof linearRules.defaults>;
