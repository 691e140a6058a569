import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

/** A proxy running in front of a server, from a configuration the README documents. */
export interface RunningProxy {
  /** What it said on stdout and stderr. */
  output(): string;
  stop(): Promise<void>;
}

/** Whether `command` (nginx, caddy) is installed: it runs and says its version. */
export async function isInstalled(command: 'nginx' | 'caddy'): Promise<boolean> {
  return promisify(execFile)(pathOf(command), [command === 'nginx' ? '-v' : 'version']).then(
    () => true,
    () => false,
  );
}

/** Debian's nginx is in /usr/sbin, which a user's PATH does not have. */
function pathOf(command: string): string {
  return command === 'nginx' && existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : command;
}

/** A self-signed certificate for `name` (a host name or an IP address) and its key, made by openssl for one test file. */
export interface TestCertificate {
  cert: string;
  key: string;
  /** The PEM, for clients to trust. */
  pem: string;
  remove(): Promise<void>;
}

export async function makeCertificate(name: string): Promise<TestCertificate> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-cert-'));
  // As root, nginx reads it in its master (root) process; Caddy runs as whoever starts it.
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const made = promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    `subjectAltName=${isIP(name) ? 'IP' : 'DNS'}:${name}`,
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  await made.catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOENT'
      ? new Error(
          'openssl is not installed (apt-get install openssl): it makes the test certificate',
        )
      : error;
  });
  return {
    cert,
    key,
    pem: await readFile(cert, 'utf8'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * nginx with `site` (a README block: `upstream` and `server` for the http context) in a main
 * configuration of the test's own: in the foreground, its pid, temporary files and log in a
 * folder of its own, so that nothing of the machine's nginx is used or touched.
 */
export async function startNginx(site: string, port: number): Promise<RunningProxy> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-nginx-'));
  // As root, nginx's workers run as nobody: they must reach the temporary files' folders.
  await chmod(dir, 0o755);
  await mkdir(join(dir, 'logs'));
  const root = process.getuid?.() === 0;
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'];
  const conf = [
    'daemon off;',
    root ? 'user nobody nogroup;' : '',
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    'error_log stderr notice;',
    'events { worker_connections 256; }',
    'http {',
    '  access_log off;',
    // A machine's nginx.conf may compress more than Debian's does (gzip on, text/html only):
    // every type here, the event streams' included, the hardest case for them. gzip holds its
    // output until a buffer fills, unless the response is passed on unbuffered, chunk by chunk.
    '  gzip on;',
    '  gzip_types *;',
    '  gzip_min_length 0;',
    ...temp.map((name) => `  ${name}_temp_path ${join(dir, name)};`),
    site,
    '}',
  ].join('\n');
  await writeFile(join(dir, 'nginx.conf'), conf);
  return run(
    'nginx',
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'],
    {},
    port,
    // SIGTERM: a fast stop, which does not wait for the event streams to end (SIGQUIT would).
    'SIGTERM',
    () => rm(dir, { recursive: true, force: true }),
  );
}

/**
 * Caddy with `caddyfile` (the README's, already given the test's address and certificate), its
 * admin endpoint off and its data in a folder of its own.
 */
export async function startCaddy(caddyfile: string, port: number): Promise<RunningProxy> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-caddy-'));
  const global = [
    '{',
    '\tadmin off',
    // Not port 80 (taken, or needing root): the test speaks https only.
    '\tauto_https disable_redirects',
    `\tstorage file_system ${join(dir, 'storage')}`,
    '}',
    '',
  ].join('\n');
  await writeFile(join(dir, 'Caddyfile'), global + caddyfile);
  return run(
    'caddy',
    ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'],
    { HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') },
    port,
    'SIGTERM',
    () => rm(dir, { recursive: true, force: true }),
  );
}

/** Starts `command` in the foreground and resolves once `port` takes connections. */
async function run(
  command: string,
  args: string[],
  env: Record<string, string>,
  port: number,
  stopSignal: NodeJS.Signals,
  cleanUp: () => Promise<void>,
): Promise<RunningProxy> {
  const child = spawn(pathOf(command), args, { env: { ...process.env, ...env } });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT'
          ? new Error(`${command} is not installed: apt-get install ${command} (.ci/run does)`)
          : error,
      ),
    );
    child.once('exit', (code) =>
      reject(new Error(`${command} exited (${code}) before it listened:\n${output}`)),
    );
  });
  failed.catch(() => {});
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(stopSignal);
    await exited;
    await cleanUp();
  };
  try {
    await Promise.race([failed, listening(port)]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { output: () => output, stop };
}

async function listening(port: number): Promise<void> {
  for (const started = Date.now(); Date.now() - started < 20_000; await sleep(50)) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      const done = (connected: boolean) => {
        socket.destroy();
        resolve(connected);
      };
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
      socket.setTimeout(1000, () => done(false));
    });
    if (open) return;
  }
  throw new Error(`nothing listened on 127.0.0.1:${port} within 20 s`);
}
