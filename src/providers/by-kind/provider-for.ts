import { createGiteaProvider } from '../gitea/gitea-provider.js';
import { githubProvider } from '../github/github-provider.js';
import { gitlabProvider } from '../gitlab/gitlab-provider.js';
import { linearProvider } from '../linear/linear-provider.js';
import type { Provider, ProviderKind } from '../provider.js';
import { standardWebhooksProvider } from '../standard-webhooks/standard-webhooks-provider.js';

/**
 * Every provider by its kind: what the intake, the outbox and the sources' registry look a
 * delivery's, a write-back's or a source's kind up in. A folder of its own, so that the providers
 * (which import what they share from src/providers) are never imported back from there.
 */
const PROVIDERS: Record<ProviderKind, Provider> = {
  github: githubProvider,
  gitea: createGiteaProvider('gitea'),
  forgejo: createGiteaProvider('forgejo'),
  gitlab: gitlabProvider,
  linear: linearProvider,
  'standard-webhooks': standardWebhooksProvider,
};

export const providerFor = (kind: ProviderKind): Provider => PROVIDERS[kind];

/** The provider of a kind as stored (a delivery's, a todo's source); null for any other. */
export const providerOfKind = (kind: string): Provider | null =>
  Object.hasOwn(PROVIDERS, kind) ? PROVIDERS[kind as ProviderKind] : null;
