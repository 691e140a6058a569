import { readFile } from 'node:fs/promises';
import yaml from 'js-yaml';
import { expect, test } from 'vitest';

// The app manifest in the repository creates the app with exactly the scopes switchboard needs,
// and names the paths switchboard serves (the other tests post to those paths and follow those
// redirects).
test('the manifest asks for exactly the scopes used, and names the paths served', async () => {
  const text = await readFile(new URL('../../slack-app-manifest.yml', import.meta.url), 'utf8');
  const manifest = yaml.load(text) as any;
  expect(manifest.oauth_config.scopes).toEqual({
    bot: ['chat:write', 'im:history'],
    user: ['openid'],
  });
  const base = 'https://switchboard.example.com';
  expect(manifest.oauth_config.redirect_urls).toEqual([
    `${base}/slack/install/callback`,
    `${base}/slack/sign-in/callback`,
  ]);
  expect(manifest.settings.event_subscriptions.request_url).toBe(`${base}/api/slack/events`);
  expect(manifest.settings.event_subscriptions.bot_events).toEqual([
    'message.im',
    'app_uninstalled',
    'tokens_revoked',
  ]);
  expect(manifest.settings.interactivity).toEqual({
    is_enabled: true,
    request_url: `${base}/api/slack/interactions`,
  });
  expect(manifest.settings.socket_mode_enabled).toBe(false);
});
