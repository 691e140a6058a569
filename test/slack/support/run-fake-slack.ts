import { BOT_TOKEN, SIGNING_SECRET, startFakeSlack } from './fake-slack.js';

/**
 * `npm run fake-slack`: the fake Slack of the tests, for a person to try the Slack path with no
 * network and no workspace — `switchboard slack add`, linking a Slack user with the code sent to
 * the bot, an approval's message with Allow and Deny, and its update once decided. PORT picks
 * its port (3002); SWITCHBOARD_URL, the switchboard it sends presses and messages to
 * (http://127.0.0.1:3000).
 */
const switchboardUrl = (process.env.SWITCHBOARD_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
const fake = await startFakeSlack({ port: Number(process.env.PORT ?? 3002), switchboardUrl });
const page = fake.url.replace(/\/api\/$/, '');
process.stdout.write(
  [
    `A fake Slack is listening on ${page} (Ctrl-C stops it); it sends what you do there to ${switchboardUrl}.`,
    '',
    'In another terminal, start switchboard against its Web API:',
    `  SWITCHBOARD_SLACK_API_URL=${fake.url} npm start`,
    'and in a third (the switchboard command on your PATH: npm link), give it the fake app:',
    `  switchboard slack add --bot-token ${BOT_TOKEN} --signing-secret ${SIGNING_SECRET}`,
    `Link yourself: run switchboard slack link, and send the code it prints to the bot on ${page}.`,
    'Then ask yourself something; its message appears there, with Allow and Deny:',
    '  switchboard approval request "Deploy build 4711 to production?" --wait 900',
    '',
  ].join('\n'),
);
const stop = () => void fake.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
