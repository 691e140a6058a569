import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { verify } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, WEBHOOK_SECRET, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, runCli, type CliHome } from './support/run-cli.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/github/', import.meta.url));

let home: CliHome;
beforeAll(async () => {
  home = await createCliHome();
});
afterAll(() => home?.remove());

describe('against a receiver that checks the signature', () => {
  let receiver: Server;
  let url: string;
  const received: { headers: IncomingHttpHeaders; body: Buffer; valid: boolean }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        if (req.url === '/moved') {
          res.writeHead(303, { location: '/sign-in?next=%2F', 'content-type': 'text/plain' });
          res.end('See Other. Redirecting to /sign-in?next=%2F');
          return;
        }
        void verify(
          's3cret',
          body.toString('utf8'),
          String(req.headers['x-hub-signature-256']),
        ).then((valid) => {
          received.push({ headers: req.headers, body, valid });
          res.writeHead(valid ? 202 : 401, { 'content-type': 'application/json' });
          res.end(valid ? '{"ok":true}' : '{"error":"bad signature","code":"invalid"}');
        });
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise((resolve) => receiver.close(resolve)));

  test("signs the file's exact bytes and sends GitHub's headers", async () => {
    // Odd spacing, a non-ASCII character and no final newline: the bytes must arrive untouched.
    const payload = '{ "action":"opened",  "zen": "Design for failure — always" }';
    const file = join(home.dir, 'payload.json');
    await writeFile(file, payload);
    const sent = await runCli(
      ['webhook', 'send', file, '--event', 'issues', '--url', url, '--secret', 's3cret'],
      home.env,
    );
    expect(sent).toMatchObject({ code: 0, stderr: '' });
    const last = received.at(-1)!;
    expect(last.valid).toBe(true);
    expect(last.body.toString('utf8')).toBe(payload);
    expect(last.headers).toMatchObject({
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(sent.stdout).toBe(
      `delivered ${String(last.headers['x-github-delivery'])} (issues) to ${url}: HTTP 202 {"ok":true}\n`,
    );
  });

  test('--delivery replays an id; WEBHOOK_SECRET stands in for --secret; --json', async () => {
    const delivery = randomUUID();
    const sent = await runCli(
      [
        'webhook',
        'send',
        join(FIXTURES, 'ping.json'),
        '--event',
        'ping',
        '--url',
        url,
        '--delivery',
        delivery,
        '--json',
      ],
      { ...home.env, WEBHOOK_SECRET: 's3cret' },
    );
    expect(parseJson(sent)).toEqual({
      url,
      event: 'ping',
      delivery,
      status: 202,
      body: '{"ok":true}',
    });
    expect(received.at(-1)).toMatchObject({
      valid: true,
      headers: { 'x-github-delivery': delivery },
    });
  });

  test('a refused delivery exits 3; no secret or no file is a usage error', async () => {
    const file = join(FIXTURES, 'ping.json');
    const refused = await runCli(
      ['webhook', 'send', file, '--event', 'ping', '--url', url, '--secret', 'wrong'],
      home.env,
    );
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/^delivery \S+ refused: HTTP 401 — bad signature\n$/);
    const noSecret = await runCli(
      ['webhook', 'send', file, '--event', 'ping', '--url', url],
      home.env,
    );
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toBe('no webhook secret — pass --secret or set WEBHOOK_SECRET\n');
    const noFile = await runCli(
      ['webhook', 'send', 'missing.json', '--event', 'ping', '--url', url, '--secret', 'x'],
      home.env,
    );
    expect(noFile.code).toBe(2);
  });
  test('regression: a redirect (303) printed "delivered" and exited 0, though nothing was recorded', async () => {
    const moved = url.replace(/\/hook$/, '/moved');
    const sent = await runCli(
      [
        'webhook',
        'send',
        join(FIXTURES, 'ping.json'),
        '--event',
        'ping',
        '--url',
        moved,
        '--secret',
        's3cret',
      ],
      home.env,
    );
    expect(sent.code).toBe(1);
    expect(sent.stdout).toBe('');
    expect(sent.stderr).toMatch(
      new RegExp(
        `^delivery \\S+ not recorded: HTTP 303, a redirect to /sign-in\\?next=%2F — ${moved} takes no webhooks: --url is the server, or its webhook URL\n$`,
      ),
    );
  });
});

describe('against a switchboard server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.stop());

  test('delivers to the server of the credentials by default, and the delivery becomes a todo', async () => {
    const env = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
    const file = join(FIXTURES, 'issues.labeled.switchboard.json');
    const sent = await runCli(
      ['webhook', 'send', file, '--event', 'issues', '--secret', WEBHOOK_SECRET],
      env,
    );
    expect(sent.code).toBe(0);
    expect(sent.stdout).toMatch(
      new RegExp(`^delivered \\S+ \\(issues\\) to ${server.url}/api/github/webhooks: HTTP 2\\d\\d`),
    );
    const { todos } = parseJson(await runCli(['todo', 'list', '--queue', 'issues', '--json'], env));
    expect(todos).toEqual([
      expect.objectContaining({ kind: 'github.issues.labeled', source: 'github' }),
    ]);

    const forged = await runCli(
      ['webhook', 'send', file, '--event', 'issues', '--secret', 'not-the-secret'],
      env,
    );
    expect(forged.code).toBe(3);
  });

  test("regression: --url with the server's address posted to / and printed a 303 as delivered", async () => {
    const env = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
    const delivery = randomUUID();
    const sent = await runCli(
      [
        'webhook',
        'send',
        join(FIXTURES, 'ping.json'),
        '--event',
        'ping',
        '--url',
        server.url,
        '--secret',
        WEBHOOK_SECRET,
        '--delivery',
        delivery,
      ],
      env,
    );
    expect(sent).toMatchObject({ code: 0, stderr: '' });
    expect(sent.stdout).toMatch(
      new RegExp(
        `^delivered ${delivery} \\(ping\\) to ${server.url}/api/github/webhooks: HTTP 2\\d\\d`,
      ),
    );
    // Recorded: the server has the delivery.
    const shown = await runCli(['deliveries', 'list', '--json'], env);
    expect(JSON.stringify(parseJson(shown))).toContain(delivery);
  });
});

describe('against a switchboard server without WEBHOOK_SECRET', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ webhookSecret: null });
  });
  afterAll(() => server?.stop());

  test('regression: a server with webhooks off (503) exits 3 as --help says, not 1', async () => {
    const env = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
    const sent = await runCli(
      ['webhook', 'send', join(FIXTURES, 'ping.json'), '--event', 'ping', '--secret', 's3cret'],
      env,
    );
    expect(sent.code).toBe(3);
    expect(sent.stdout).toBe('');
    expect(sent.stderr).toMatch(
      /^delivery \S+ refused: HTTP 503 — webhooks are off: WEBHOOK_SECRET is not set on this server\n$/,
    );
    // The help says the same, code by code.
    const help = await runCli(['webhook', 'send', '--help'], env);
    expect(help.code).toBe(0);
    const text = help.stdout.replace(/\s+/g, ' ');
    expect(text).toMatch(/0 when the server took the delivery \(2xx\)/);
    expect(text).toMatch(
      /3 when it refused it: any 4xx .*, or 503 from a server whose webhooks are off \(no WEBHOOK_SECRET\)/,
    );
    expect(text).toMatch(/4 when the server cannot be reached or its database is not answering/);
    expect(text).toMatch(/1 on any other answer \(a redirect, a server failure\)/);
  });
});
