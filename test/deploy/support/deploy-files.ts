import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';

export const ROOT = new URL('../../../', import.meta.url);

export interface ComposeService {
  image?: string;
  build?: { context: string; args?: Record<string, string> };
  env_file?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: string[] | Record<string, { condition: string }>;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** compose.yaml as written, variables not yet substituted. */
export function readComposeFile(): ComposeFile {
  return yaml.load(readFileSync(new URL('compose.yaml', ROOT), 'utf8')) as ComposeFile;
}

/**
 * Compose's variable substitution, in the forms compose.yaml uses: `${VAR}` (empty when unset),
 * `${VAR:-default}` (when unset or empty) and `${VAR:?message}` (an error when unset or empty).
 * Anything else with a `$` is refused, so that a form this does not know fails loudly.
 */
export function interpolate<T>(value: T, vars: Record<string, string | undefined>): T {
  if (typeof value === 'string') {
    const out = value.replace(
      /\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g,
      (_all, name: string, op?: string, arg?: string) => {
        const set = vars[name];
        if (op === '-') return set || arg!;
        if (op === '?' && !set) throw new Error(`${name}: ${arg}`);
        return set ?? '';
      },
    );
    if (out.includes('$')) throw new Error(`unsupported substitution in ${JSON.stringify(value)}`);
    return out as T;
  }
  if (Array.isArray(value)) return value.map((item: unknown) => interpolate(item, vars)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolate(item, vars)]),
    ) as T;
  }
  return value;
}

/**
 * podman-compose 1.0's substitution (Debian 12's 1.0.3, podman_compose.py's var_re and
 * rec_subs), for a file to be checked against: `$$`, `$VAR`, `${VAR}`, and `${VAR:-default}`,
 * `${VAR-default}`, `${VAR:?error}`, `${VAR?error}` only with a default or an error that is not
 * empty — `${VAR:-}` is no match, and stays in the file as written. Both defaults apply only
 * when the variable is unset, and both errors too.
 */
export function interpolateLikePodmanCompose1<T>(value: T, vars: Record<string, string>): T {
  if (typeof value === 'string') {
    return value.replace(
      /\$(?:(\$)|([_a-zA-Z][_a-zA-Z0-9]*)|\{([_a-zA-Z][_a-zA-Z0-9]*)(?::?-([^}]+)|:?\?([^}]+))?\})/g,
      (
        _all,
        escaped?: string,
        named?: string,
        braced?: string,
        fallback?: string,
        error?: string,
      ) => {
        if (escaped) return '$';
        const set = vars[(named ?? braced)!];
        if (set !== undefined) return set;
        if (error !== undefined) throw new Error(error);
        return fallback ?? '';
      },
    ) as T;
  }
  if (Array.isArray(value))
    return value.map((item: unknown) => interpolateLikePodmanCompose1(item, vars)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateLikePodmanCompose1(item, vars)]),
    ) as T;
  }
  return value;
}

/** What the Containerfile's ARG BASE_IMAGE defaults to. */
export function containerfileBaseImage(): string {
  const text = readFileSync(new URL('Containerfile', ROOT), 'utf8');
  return /^ARG BASE_IMAGE=(\S+)$/m.exec(text)![1]!;
}

export interface ImageDefinition {
  /** ENV of the image's last stage. */
  env: Record<string, string>;
  volumes: string[];
  expose: string[];
}

/** What the Containerfile's last stage declares: the environment the server starts with, its volumes and ports. */
export function readContainerfile(): ImageDefinition {
  const text = readFileSync(new URL('Containerfile', ROOT), 'utf8');
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const lastStage = instructions.slice(instructions.findLastIndex((line) => /^FROM /.test(line)));
  const image: ImageDefinition = { env: {}, volumes: [], expose: [] };
  for (const line of lastStage) {
    const [keyword, ...words] = line.split(/\s+/);
    if (keyword === 'ENV') {
      for (const word of words) {
        const [name, ...rest] = word.split('=');
        image.env[name!] = rest.join('=');
      }
    }
    if (keyword === 'VOLUME') image.volumes.push(...words);
    if (keyword === 'EXPOSE') image.expose.push(...words);
  }
  return image;
}
