import postgres from 'postgres';
import { invalid } from './ledger-error.js';

const SLUG = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const KIND = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+){0,7}$/;

export function assertQueue(queue: string): void {
  if (!SLUG.test(queue)) {
    throw invalid(
      `queue must be lowercase letters, digits, '.', '_' or '-' (at most 64), not ${JSON.stringify(queue.slice(0, 80))}`,
    );
  }
}

export function assertName(name: string, what = 'name'): void {
  if (!SLUG.test(name)) {
    throw invalid(
      `${what} must be lowercase letters, digits, '.', '_' or '-' (at most 64), not ${JSON.stringify(name.slice(0, 80))}`,
    );
  }
}

export function assertKind(kind: string): void {
  if (kind.length > 100 || !KIND.test(kind)) {
    throw invalid(
      `kind must be dotted lowercase words like github.issues.opened, not ${JSON.stringify(kind.slice(0, 80))}`,
    );
  }
}

export const TEXT_MAX = 65_536;
export const RESULT_MAX_BYTES = 1_048_576;

/**
 * PostgreSQL stores neither NUL characters in text nor \u0000 in jsonb; refuse them (and
 * oversized values) with a clear message instead of a driver error.
 */
export function assertStorable(fields: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (text === undefined) throw invalid(`${name} is not JSON`);
    if (typeof value === 'string' ? text.includes('\u0000') : text.includes('\\u0000')) {
      throw invalid(`${name} contains a NUL character`);
    }
    const limit = typeof value === 'string' ? TEXT_MAX : RESULT_MAX_BYTES;
    if ((typeof value === 'string' ? text.length : Buffer.byteLength(text)) > limit) {
      throw invalid(
        `${name} is too long (at most ${limit} ${typeof value === 'string' ? 'characters' : 'bytes'})`,
      );
    }
  }
}

/** A CHECK the input slipped past: report the rule it broke, never the statement. */
export async function translateConstraintErrors<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof postgres.PostgresError && error.code === '23514') {
      throw invalid(`refused by rule ${error.constraint_name}`);
    }
    throw error;
  }
}
