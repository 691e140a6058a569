/** A benchmark size from the environment (`BENCH_TODOS=2000`), or `fallback` when unset. */
export function countFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const count = Number(raw);
  if (!Number.isInteger(count) || count < 1) {
    throw new Error(`${name} must be a whole number ≥ 1, not ${JSON.stringify(raw)}`);
  }
  return count;
}
