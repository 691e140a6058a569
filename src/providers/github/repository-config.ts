import { z } from 'zod';
import { Command, rule, ruleOn, type RuleSet } from '../rule-schema.js';

/** GitHub's author associations, most trusted first. */
export const AUTHOR_ASSOCIATIONS = [
  'OWNER',
  'MEMBER',
  'COLLABORATOR',
  'CONTRIBUTOR',
  'FIRST_TIME_CONTRIBUTOR',
  'FIRST_TIMER',
  'MANNEQUIN',
  'NONE',
] as const;

const Login = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?$/, 'must be a GitHub login');
/** An @name as GitHub's logins go: no dots or underscores. */
const GitHubMention = z
  .string()
  .regex(/^@[A-Za-z0-9][A-Za-z0-9-]{0,38}$/, 'must be an @name')
  .nullable();

/**
 * `.github/switchboard.yml`, merged over the defaults (a file names only what it changes; arrays
 * replace the default rather than extend it). Strict: a misspelt key makes the whole file
 * invalid, which is reported and the defaults used, rather than silently ignored.
 */
export const RepositoryConfig = z.strictObject({
  trust: z.strictObject({
    /** Author associations whose events become pending todos; others are quarantined. */
    associations: z.array(z.enum(AUTHOR_ASSOCIATIONS)),
    /** Bot logins (`name[bot]`) whose events are treated like a trusted human's. */
    bots: z.array(Login),
  }),
  rules: z.strictObject({
    issue_labeled: z.strictObject({ ...rule, label: z.string().min(1).max(50) }),
    issue_assigned: z.strictObject({ ...rule, logins: z.array(Login) }),
    comment: z.strictObject({ ...rule, mention: GitHubMention, command: Command }),
    /** A trusted author's pull request, opened and not a draft: a review to do. */
    pull_request_opened: z.strictObject(rule),
    review_requested: z.strictObject({
      ...rule,
      /** Only reviews requested from these logins; empty: any review request. */
      reviewers: z.array(Login),
    }),
    changes_requested: z.strictObject(rule),
    check_suite_failed: z.strictObject({
      ...rule,
      /** Check suites of these apps (by slug) are left to another rule: GitHub Actions' to workflow_run_failed. */
      ignore_apps: z.array(z.string().max(100)),
    }),
    workflow_run_failed: z.strictObject(rule),
  }),
});

export type RepositoryConfig = z.infer<typeof RepositoryConfig>;

export const DEFAULT_CONFIG: RepositoryConfig = {
  trust: { associations: ['OWNER', 'MEMBER', 'COLLABORATOR'], bots: [] },
  rules: {
    issue_labeled: { ...ruleOn('issues'), label: 'switchboard' },
    issue_assigned: { ...ruleOn('issues'), logins: [] },
    comment: { ...ruleOn('issues'), mention: '@switchboard', command: '/switchboard' },
    pull_request_opened: ruleOn('reviews'),
    review_requested: { ...ruleOn('reviews'), reviewers: [] },
    changes_requested: ruleOn('reviews'),
    check_suite_failed: { ...ruleOn('ci'), ignore_apps: ['github-actions'] },
    workflow_run_failed: ruleOn('ci'),
  },
};

/** GitHub's rules: a repository's file over these defaults, on GitHub's own queues. */
export const githubRules: RuleSet<RepositoryConfig> = {
  schema: RepositoryConfig,
  defaults: () => structuredClone(DEFAULT_CONFIG),
};
