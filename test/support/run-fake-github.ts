import { FAKE_REPOSITORY, FAKE_USER, startFakeGitHubServer } from './fake-github-server.js';

/**
 * `npm run fake-github`: the fake GitHub of the tests, for a person to try the App path with no
 * network — `switchboard github setup` and its Create button, installing, a comment that becomes
 * a todo, the 👀 that goes back, and "Sign in with GitHub". PORT picks its port (3001).
 */
const fake = await startFakeGitHubServer({ port: Number(process.env.PORT ?? 3001) });
process.stdout.write(
  [
    `A fake GitHub Enterprise Server is listening on ${fake.url} (Ctrl-C stops it).`,
    '',
    'In another terminal, start switchboard against it:',
    `  GHE_HOST=${fake.env.GHE_HOST} GHE_PROTOCOL=${fake.env.GHE_PROTOCOL} npm start`,
    'and in a third (the switchboard command on your PATH: npm link), set up the App:',
    '  switchboard github setup',
    `Click Create, then Install; then comment on ${fake.url}/${FAKE_REPOSITORY}/issues/1:`,
    'the comment becomes a todo (switchboard todo list), and its 👀 shows on that page.',
    `To sign in with GitHub, add yourself first: switchboard human add NAME --github-login ${FAKE_USER.login}`,
    '',
  ].join('\n'),
);
const stop = () => void fake.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
