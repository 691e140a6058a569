/** What `switchboard source add KIND NAME` takes (DESIGN §5.7). */
export const SOURCE_KINDS = ['gitea', 'forgejo', 'gitlab', 'linear', 'standard-webhooks'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];
