import postgres from 'postgres';
import { kindProblem, nameProblem } from '../contract/name-rules.js';
import { TEXT_MAX } from '../contract/text-limits.js';
import { invalid } from './ledger-error.js';

export function assertQueue(queue: string): void {
  const problem = nameProblem(queue, 'queue');
  if (problem) throw invalid(problem);
}

export function assertName(name: string, what = 'name'): void {
  const problem = nameProblem(name, what);
  if (problem) throw invalid(problem);
}

export function assertKind(kind: string): void {
  const problem = kindProblem(kind);
  if (problem) throw invalid(problem);
}

export const RESULT_MAX_BYTES = 1_048_576;
/** Deeper JSON is no result anyone reads; refusing it early also keeps recursive code off it. */
export const JSON_MAX_DEPTH = 64;

// A UTF-16 surrogate without its other half: not a character, so PostgreSQL would store U+FFFD
// (text) or refuse the statement (jsonb) instead of what was sent.
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Text and JSON are stored exactly as sent, or refused with a clear message instead of a driver
 * error or a silent change: no NUL characters (PostgreSQL stores none), no unpaired surrogates,
 * JSON at most 64 levels deep, nothing oversized.
 */
export function assertStorable(fields: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue;
    if (typeof value === 'string') {
      assertStorableText(name, value);
      if (value.length > TEXT_MAX)
        throw invalid(`${name} is too long (at most ${TEXT_MAX} characters)`);
      continue;
    }
    assertStorableJson(name, value);
    const text = JSON.stringify(value);
    if (text === undefined) throw invalid(`${name} is not JSON`);
    if (Buffer.byteLength(text) > RESULT_MAX_BYTES) {
      throw invalid(`${name} is too long (at most ${RESULT_MAX_BYTES} bytes)`);
    }
  }
}

function assertStorableText(name: string, text: string): void {
  if (text.includes('\u0000')) throw invalid(`${name} contains a NUL character`);
  if (UNPAIRED_SURROGATE.test(text)) {
    throw invalid(`${name} contains an unpaired surrogate (not a Unicode character)`);
  }
}

/** Every string and key of a JSON value, walked without recursion (the value may be very deep). */
function assertStorableJson(name: string, value: unknown): void {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item === 'string') assertStorableText(name, item);
    if (typeof item !== 'object' || item === null) continue;
    if (depth + 1 > JSON_MAX_DEPTH) {
      throw invalid(`${name} is nested too deeply (at most ${JSON_MAX_DEPTH} levels)`);
    }
    for (const [key, inner] of Object.entries(item)) {
      if (!Array.isArray(item)) assertStorableText(name, key);
      stack.push([inner, depth + 1]);
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
