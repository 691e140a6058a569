import { generateKeyPairSync } from 'node:crypto';
import nock from 'nock';
import type { GitHubAppCredentials } from '../../src/platform/config/server-config.js';

export const GITHUB_API = 'https://api.github.com';
export const INSTALLATION_TOKEN = 'ghs_test_installation_token_not_a_secret';

/** App credentials with a real (throwaway) RSA key, so Probot signs real JWTs. */
export function testAppCredentials(): GitHubAppCredentials {
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return { appId: '424242', privateKey };
}

/** GitHub with the network off: only what a test nocks answers; the local server stays reachable. */
export function isolateFromGitHub(): void {
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
}

/** The installation access token Probot asks for before its first call for installation 1. */
export function nockInstallationToken(): nock.Scope {
  return nock(GITHUB_API)
    .persist()
    .post('/app/installations/1/access_tokens')
    .reply(201, {
      token: INSTALLATION_TOKEN,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      permissions: { issues: 'write' },
      repository_selection: 'all',
    });
}

/** No repository has a `.github/switchboard.yml`, for as many requests as come: the defaults apply. */
export function nockNoRepositoryConfig(): void {
  nock(GITHUB_API)
    .persist()
    .get((path) => path.includes('switchboard.yml'))
    .reply(404, { message: 'Not Found' });
}

const CONFIG_PATH = /\/contents\/\.github(%2F|\/)switchboard\.yml/;

/**
 * `.github/switchboard.yml` of a repository as GitHub's contents API serves it. Probot's loader
 * asks for the raw media type and gets the file's text; any other client gets the JSON form
 * with base64 content — both are answered as GitHub would.
 */
export function nockRepositoryConfig(repository: string, yaml: string | null, times = 1): void {
  const [owner] = repository.split('/');
  const file = nock(GITHUB_API)
    .get((path) => path.startsWith(`/repos/${repository}/`) && CONFIG_PATH.test(path))
    .times(times);
  if (yaml === null) {
    file.reply(404, { message: 'Not Found' });
    // Probot then looks in the owner's `.github` repository.
    nock(GITHUB_API)
      .get((path) => path.startsWith(`/repos/${owner}/.github/`) && CONFIG_PATH.test(path))
      .times(times)
      .reply(404, { message: 'Not Found' });
    return;
  }
  file.reply(function () {
    const accept = String(this.req.headers.accept ?? '');
    return accept.includes('raw')
      ? [200, yaml, { 'content-type': 'application/vnd.github.raw; charset=utf-8' }]
      : [
          200,
          {
            type: 'file',
            encoding: 'base64',
            path: '.github/switchboard.yml',
            content: Buffer.from(yaml).toString('base64'),
          },
          { 'content-type': 'application/json; charset=utf-8' },
        ];
  });
}
