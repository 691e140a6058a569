/**
 * One comparison for the summary table `npm run bench` prints first: a figure of switchboard's,
 * the baseline it is set against (measured in the same run), their ratio, and the target if
 * there is one.
 */
export interface SummaryRow {
  /** What was measured, e.g. "claim + complete, 8 workers, 5,000 todos". */
  benchmark: string;
  figure: string;
  baseline: string;
  /** figure ÷ baseline, formatted; the rows say which way is better. */
  ratio: string;
  /** The target and whether it was met, or `—` for none. */
  target: string;
}

/** What a benchmark prints: its rows of the summary table, and its own detailed table. */
export interface BenchmarkReport {
  summary: SummaryRow[];
  details: string;
}

/** One benchmark the runner knows about: `run` does the work and returns what to print. */
export interface Benchmark {
  name: string;
  run(url: string): Promise<BenchmarkReport>;
}
