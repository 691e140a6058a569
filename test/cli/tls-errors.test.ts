import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { makeCertificate, type TestCertificate } from '../deploy/support/reverse-proxy.js';
import { createCliHome, runCli, type CliHome } from './support/run-cli.js';

// A server behind TLS whose certificate this machine does not trust (a team's own CA, or a
// self-signed one), reached by the CLI: what it says, and that what it says to do works.
let home: CliHome;
let certificate: TestCertificate;
let server: Server;
let url: string;

beforeAll(async () => {
  [home, certificate] = await Promise.all([createCliHome(), makeCertificate('127.0.0.1')]);
  const key = await readFile(certificate.key, 'utf8');
  server = createServer({ cert: certificate.pem, key }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"todos":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await Promise.all([home?.remove(), certificate?.remove()]);
});

test('regression: a certificate this machine does not trust read as a dead server ("is the server running?")', async () => {
  const env = { ...home.env, SWITCHBOARD_URL: url, SWITCHBOARD_TOKEN: 'sbk_test' };
  const refused = await runCli(['todo', 'list'], env);
  expect(refused).toMatchObject({ code: 4, stdout: '' });
  expect(refused.stderr).toBe(
    `the certificate of ${url} is not trusted here: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT) — if your own CA signed it, set NODE_EXTRA_CA_CERTS to that CA's PEM file\n`,
  );
  // What it says to do is what works.
  const trusted = await runCli(['todo', 'list'], { ...env, NODE_EXTRA_CA_CERTS: certificate.cert });
  expect(trusted).toMatchObject({ code: 0, stdout: 'no todos\n', stderr: '' });
});

test('a certificate for another host is refused as such, and an http server behind https:// is named', async () => {
  const other = url.replace('127.0.0.1', 'localhost');
  const wrongHost = await runCli(['todo', 'list'], {
    ...home.env,
    SWITCHBOARD_URL: other,
    SWITCHBOARD_TOKEN: 'sbk_test',
    NODE_EXTRA_CA_CERTS: certificate.cert,
  });
  expect(wrongHost.code).toBe(4);
  expect(wrongHost.stderr).toMatch(
    /^the certificate of https:\/\/localhost:\d+ is refused: Hostname\/IP does not match certificate's altnames \(ERR_TLS_CERT_ALTNAME_INVALID\) — the server's certificate must be fixed\n$/,
  );

  const plain = createHttpServer((_req, res) => res.end('{}'));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    const http = `https://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    const noTls = await runCli(['todo', 'list'], {
      ...home.env,
      SWITCHBOARD_URL: http,
      SWITCHBOARD_TOKEN: 'sbk_test',
    });
    expect(noTls.code).toBe(4);
    expect(noTls.stderr).toBe(
      `${http} does not answer in TLS (EPROTO) — is it an http:// address?\n`,
    );
  } finally {
    plain.closeAllConnections();
    await new Promise((resolve) => plain.close(resolve));
  }
});
