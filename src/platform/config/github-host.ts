/**
 * Where GitHub is: github.com, or a GitHub Enterprise Server named by GHE_HOST and GHE_PROTOCOL
 * (Probot's names). Every request to GitHub is built on it — the App's API client, the manifest
 * flow's form, the manifest code's conversion, the console's OAuth sign-in, reconcile — so one
 * setting moves them all.
 */
export interface GitHubHost {
  /** The web origin: forms, OAuth's authorize and token endpoints, install pages. */
  web: string;
  /** The REST API's base (GitHub Enterprise Server serves it under /api/v3). */
  api: string;
}

export const GITHUB_DOT_COM: GitHubHost = {
  web: 'https://github.com',
  api: 'https://api.github.com',
};

/** GHE_HOST (a host name, with a port if need be) and GHE_PROTOCOL (https unless said). */
export function gitHubHost(host?: string, protocol: 'http' | 'https' = 'https'): GitHubHost {
  if (!host) return GITHUB_DOT_COM;
  const web = `${protocol}://${host}`;
  return { web, api: `${web}/api/v3` };
}
