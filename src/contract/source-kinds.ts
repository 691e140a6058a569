import type { ProviderKind } from './todo.js';

/** What `switchboard source add KIND NAME` takes (DESIGN §5.7): every provider but the GitHub App. */
export const SOURCE_KINDS = [
  'gitea',
  'forgejo',
  'gitlab',
  'linear',
  'standard-webhooks',
] as const satisfies readonly Exclude<ProviderKind, 'github'>[];
export type SourceKind = (typeof SOURCE_KINDS)[number];
