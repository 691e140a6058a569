import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ComposeService } from './deploy-files.js';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; a non-zero exit is an error carrying the end of its output, unless `check: false`. */
export function run(command: string, args: string[], options: { check?: boolean } = {}) {
  return new Promise<Ran>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      const ran = { code: code ?? 1, stdout, stderr };
      if (ran.code === 0 || options.check === false) return resolve(ran);
      const tail = `${stdout}\n${stderr}`.trim().split('\n').slice(-30).join('\n');
      reject(new Error(`${command} ${args.join(' ')} exited ${ran.code}:\n${tail}`));
    });
  });
}

export const podman = (args: string[], options?: { check?: boolean }) =>
  run('podman', args, options);

/** The local Node 20 base: no registry can be reached here, so it is made from Debian's packages. */
export const LOCAL_BASE_IMAGE = 'localhost/switchboard-ci-base:trixie';

/**
 * The base image to build on: SWITCHBOARD_TEST_BASE_IMAGE when given (e.g. node:20-bookworm-slim,
 * where a registry is reachable), else the local one — imported from a cached tarball, made by
 * mmdebstrap (about a minute) when there is none.
 */
export async function ensureBaseImage(): Promise<string> {
  const given = process.env.SWITCHBOARD_TEST_BASE_IMAGE;
  if (given) return given;
  if ((await podman(['image', 'exists', LOCAL_BASE_IMAGE], { check: false })).code === 0) {
    return LOCAL_BASE_IMAGE;
  }
  const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'switchboard');
  const tarball = join(cache, 'container-base-trixie.tar');
  // A directory here is what an older run left when mmdebstrap took `.partial` for a directory.
  if (existsSync(tarball) && statSync(tarball).isDirectory()) {
    await rm(tarball, { recursive: true, force: true });
  }
  if (!existsSync(tarball)) {
    await mkdir(dirname(tarball), { recursive: true });
    // mmdebstrap picks its output's format from the name unless told: say tar.
    const partial = join(cache, 'container-base-trixie.partial.tar');
    await rm(partial, { recursive: true, force: true });
    await run('mmdebstrap', [
      '--quiet',
      '--format=tar',
      '--variant=minbase',
      '--include=ca-certificates,nodejs,npm',
      'trixie',
      partial,
    ]);
    await rename(partial, tarball);
  }
  await podman(['import', '--quiet', tarball, LOCAL_BASE_IMAGE]);
  return LOCAL_BASE_IMAGE;
}

/**
 * `podman build` as CI can: the registry through the host's network and CA bundle, and the
 * host's npm cache (filled by `npm ci` on the host) so that the build's `npm ci` downloads little.
 * `--format docker` keeps HEALTHCHECK, which OCI images have no field for.
 */
export async function buildImage(options: {
  tag: string;
  context: string;
  baseImage: string;
  /** Mount the host's CA bundle and npm cache (the switchboard image; not apt-get's build). */
  npm?: boolean;
}): Promise<void> {
  const args = ['build', '--format', 'docker', '--network', 'host', '--tag', options.tag];
  args.push('--build-arg', `BASE_IMAGE=${options.baseImage}`);
  if (options.npm) {
    args.push('--volume', '/etc/ssl/certs:/etc/ssl/certs:ro');
    const npmCache = join(homedir(), '.npm');
    if (existsSync(npmCache)) args.push('--volume', `${npmCache}:/root/.npm`);
  }
  await podman([...args, options.context]);
}

/**
 * Starts a compose service the way Compose does, with podman: on the project's network under the
 * service's name, its environment, its named volumes (prefixed with the project), its healthcheck
 * and its ports — published on 127.0.0.1 at `hostPort`, as this machine's port 3000 may be taken.
 * Podman runs healthchecks from systemd timers, which are not here: the test runs them itself
 * (`waitHealthy`), so the timer is off.
 */
export async function startService(options: {
  project: string;
  name: string;
  service: ComposeService;
  image: string;
  hostPort?: number;
}): Promise<string> {
  const { project, name, service } = options;
  const container = `${project}-${name}`;
  const args = ['run', '--detach', '--name', container, '--network', project];
  args.push('--network-alias', name, '--health-interval', 'disable');
  for (const [key, value] of Object.entries(service.environment ?? {})) {
    args.push('--env', `${key}=${value}`);
  }
  for (const volume of service.volumes ?? []) {
    const [volumeName, target] = volume.split(':');
    args.push('--volume', `${project}_${volumeName}:${target}`);
  }
  for (const port of service.ports ?? []) {
    args.push('--publish', `127.0.0.1:${options.hostPort}:${port.split(':').at(-1)}`);
  }
  if (service.healthcheck) {
    const [form, ...command] = service.healthcheck.test;
    args.push('--health-cmd', form === 'CMD-SHELL' ? command[0]! : JSON.stringify(command));
  }
  await podman([...args, options.image]);
  return container;
}

/** Runs the container's healthcheck until it passes; fails at once, with its log, if it stops. */
export async function waitHealthy(container: string, timeoutMs = 90_000): Promise<void> {
  for (const started = Date.now(); ; await sleep(500)) {
    if ((await podman(['healthcheck', 'run', container], { check: false })).code === 0) return;
    const state = (await podman(['inspect', '--format', '{{.State.Status}}', container])).stdout;
    if (state.trim() !== 'running' || Date.now() - started > timeoutMs) {
      const logs = await podman(['logs', '--tail', '20', container], { check: false });
      throw new Error(
        `${container} is ${state.trim()}, not healthy:\n${logs.stdout}${logs.stderr}`.trim(),
      );
    }
  }
}
