import { expect, inject, test } from 'vitest';
import { formatClaimTable, runClaimBenchmark } from '../bench/claim.js';

// The benchmarks are measured by `npm run bench`, not here; this only keeps them working (a
// small run still checks that every todo was claimed and completed exactly once).
test('the claim benchmark runs end to end', { timeout: 120_000 }, async () => {
  const result = await runClaimBenchmark(inject('databaseUrl'), { todos: 60 });
  expect(result.rows.map((row) => row.key).sort()).toEqual(['bare', 'graphile', 'ledger']);
  for (const row of result.rows) {
    expect(row.rounds).toHaveLength(3);
    expect(row.median).toBeGreaterThan(0);
  }
  expect(formatClaimTable(result)).toContain('| ledger |');
});
