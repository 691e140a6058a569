import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';

export const ROOT = new URL('../../../', import.meta.url);

export interface ComposeService {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
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
