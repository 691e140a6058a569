import { z } from 'zod';
import { allowlistRules, Command, Login, Mention, rule, ruleOn } from '../rule-schema.js';

export const gitlabRules = allowlistRules(
  {
    comment: z.strictObject({ ...rule, mention: Mention, command: Command }),
    merge_request_opened: z.strictObject(rule),
    reviewer_added: z.strictObject({ ...rule, reviewers: z.array(Login) }),
    pipeline_failed: z.strictObject(rule),
    issue_labeled: z.strictObject({ ...rule, label: z.string().min(1).max(255) }),
  },
  (queue) => ({
    comment: { ...ruleOn(queue), mention: '@switchboard', command: '/switchboard' },
    merge_request_opened: ruleOn(queue),
    reviewer_added: { ...ruleOn(queue), reviewers: [] },
    pipeline_failed: ruleOn(queue),
    issue_labeled: { ...ruleOn(queue), label: 'switchboard' },
  }),
);

export type GitLabRules = ReturnType<typeof gitlabRules.defaults>;
