import type { SummaryRow } from './benchmark.js';

/** The one table of figures and ratios, as markdown, one row per comparison. */
export function formatSummaryTable(rows: readonly SummaryRow[]): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  return [
    '| benchmark | figure | baseline (same run) | ratio | target |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map(
      (row) =>
        `| ${[row.benchmark, row.figure, row.baseline, row.ratio, row.target].map(cell).join(' | ')} |`,
    ),
  ].join('\n');
}

/** A target's cell: what it is, then met or **missed**. */
export function targetCell(target: string, met: boolean): string {
  return `${target}: ${met ? 'met' : '**missed**'}`;
}

/** Whole numbers with thousands separators (1,142), as the README prints them. */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}
