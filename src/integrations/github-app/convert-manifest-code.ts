import { Octokit } from '@octokit/core';
import { z } from 'zod';
import type { ManifestConversion } from './github-app-store.js';
import type { GitHubHost } from '../../platform/config/github-host.js';

const Conversion = z.object({
  id: z.number().int().positive(),
  slug: z.string().min(1).max(200),
  name: z.string().max(200),
  html_url: z.string().max(2048),
  owner: z.object({ login: z.string().max(200).optional() }).nullish(),
  client_id: z.string().min(1).max(200),
  client_secret: z.string().min(1),
  webhook_secret: z.string().min(1).nullable(),
  pem: z.string().min(1),
});

export class ManifestConversionError extends Error {}

/**
 * Trades the code GitHub sent back for the App it registered (`POST
 * /app-manifests/{code}/conversions`, no authentication: the code is the credential, good once
 * and for an hour). A plain Octokit: the code cannot be retried once GitHub has used it.
 */
export async function convertManifestCode(
  host: GitHubHost,
  code: string,
  options: { timeoutMs?: number } = {},
): Promise<ManifestConversion> {
  const octokit = new Octokit({ baseUrl: host.api, userAgent: 'switchboard' });
  let data: unknown;
  try {
    ({ data } = await octokit.request('POST /app-manifests/{code}/conversions', {
      code,
      request: { signal: AbortSignal.timeout(options.timeoutMs ?? 20_000) },
    }));
  } catch (error) {
    // GitHub's status and message only: never the request.
    const status = (error as { status?: unknown }).status;
    const message = (error instanceof Error ? error.message : String(error)).slice(0, 200);
    throw new ManifestConversionError(
      typeof status === 'number' ? `GitHub answered ${status}: ${message}` : message,
      { cause: error },
    );
  }
  const parsed = Conversion.safeParse(data);
  if (!parsed.success)
    throw new ManifestConversionError(
      'GitHub answered, but not with an App (no id, key or client)',
    );
  return parsed.data;
}
