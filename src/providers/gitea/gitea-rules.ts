import { z } from 'zod';
import { allowlistRules, Command, Login, Mention, rule, ruleOn } from '../rule-schema.js';

/** Gitea's and Forgejo's rules: the shape of `.github/switchboard.yml`, trust an allowlist. */
export const giteaRules = allowlistRules(
  {
    issue_labeled: z.strictObject({ ...rule, label: z.string().min(1).max(50) }),
    issue_assigned: z.strictObject({ ...rule, logins: z.array(Login) }),
    comment: z.strictObject({ ...rule, mention: Mention, command: Command }),
    pull_request_opened: z.strictObject(rule),
    review_requested: z.strictObject({ ...rule, reviewers: z.array(Login) }),
  },
  (queue) => ({
    issue_labeled: { ...ruleOn(queue), label: 'switchboard' },
    issue_assigned: { ...ruleOn(queue), logins: [] },
    comment: { ...ruleOn(queue), mention: '@switchboard', command: '/switchboard' },
    pull_request_opened: ruleOn(queue),
    review_requested: { ...ruleOn(queue), reviewers: [] },
  }),
);

export type GiteaRules = ReturnType<typeof giteaRules.defaults>;
