import { z } from 'zod';

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

const Queue = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be a queue name (lowercase letters, digits, . _ -)');
const Login = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?$/, 'must be a GitHub login');

/** What every rule has: whether it is on, the queue it fills, and an optional switchboard assignee. */
const rule = {
  enabled: z.boolean(),
  queue: Queue,
  /** A switchboard principal; one that does not exist is dropped (and noted), never fatal. */
  assignee: z.string().max(64).nullable(),
};

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
    comment: z.strictObject({
      ...rule,
      /** A comment mentioning this (as a whole word) is for switchboard; null: mentions do nothing. */
      mention: z
        .string()
        .regex(/^@[A-Za-z0-9][A-Za-z0-9-]{0,38}$/, 'must be an @name')
        .nullable(),
      /** A comment whose first word is this is for switchboard; null: commands do nothing. */
      command: z
        .string()
        .regex(/^\/[a-z0-9][a-z0-9-]{0,38}$/, 'must be a /command')
        .nullable(),
    }),
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
    issue_labeled: { enabled: true, queue: 'issues', assignee: null, label: 'switchboard' },
    issue_assigned: { enabled: true, queue: 'issues', assignee: null, logins: [] },
    comment: {
      enabled: true,
      queue: 'issues',
      assignee: null,
      mention: '@switchboard',
      command: '/switchboard',
    },
    pull_request_opened: { enabled: true, queue: 'reviews', assignee: null },
    review_requested: { enabled: true, queue: 'reviews', assignee: null, reviewers: [] },
    changes_requested: { enabled: true, queue: 'reviews', assignee: null },
    check_suite_failed: {
      enabled: true,
      queue: 'ci',
      assignee: null,
      ignore_apps: ['github-actions'],
    },
    workflow_run_failed: { enabled: true, queue: 'ci', assignee: null },
  },
};
