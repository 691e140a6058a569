import { createGiteaProvider } from '../providers/gitea/gitea-provider.js';
import { gitlabProvider } from '../providers/gitlab/gitlab-provider.js';
import { linearProvider } from '../providers/linear/linear-provider.js';
import { standardWebhooksProvider } from '../providers/standard-webhooks/standard-webhooks-provider.js';
import type { SourceKind } from './source-kinds.js';
import type { SourceProvider } from './source-provider.js';

const PROVIDERS: Record<SourceKind, SourceProvider> = {
  gitea: createGiteaProvider('gitea'),
  forgejo: createGiteaProvider('forgejo'),
  gitlab: gitlabProvider,
  linear: linearProvider,
  'standard-webhooks': standardWebhooksProvider,
};

export const providerFor = (kind: SourceKind): SourceProvider => PROVIDERS[kind];
