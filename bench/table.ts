/** The one table every part of `npm run bench` prints: measurement | target | result. */

/** A row; `target` is '' for a measurement the issue sets no target for. */
export type Row = [measurement: string, target: string, result: string];

/** The result, marked ✓ or ✗ against its target. */
export const checked = (result: string, met: boolean): string => `${result} ${met ? '✓' : '✗'}`;

export const rate = (perSecond: number): string => Math.round(perSecond).toLocaleString('en-US');

/** The p-th percentile (0 to 100) of samples sorted ascending: the sample below which p % of them lie. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function printTable(rows: readonly Row[]): void {
  const header: Row = ['measurement', 'target', 'result'];
  const widths = header.map((_, c) => Math.max(...[header, ...rows].map((row) => row[c]!.length)));
  const line = (cells: readonly string[]): string => `| ${cells.map((cell, c) => cell.padEnd(widths[c]!)).join(' | ')} |`;
  console.log(`\n${line(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}
