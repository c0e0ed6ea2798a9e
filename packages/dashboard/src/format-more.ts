/**
 * Figures format.ts does not write yet: scores, signed amounts, byte sizes, and JSON typed one
 * object a line. Kept in their own file while format.ts is edited on another branch.
 */
import { fmtNumber, fmtUsd, parseJsonObject } from './format.ts';

/** An evaluation score or a confidence from 0 to 1, with 2 decimals: "0.75". */
export function fmtScore(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return value.toFixed(2);
}

/** A change of an amount, signed: "-$0.03", "+$1.20", "$0". */
export function fmtUsdChange(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (value === 0) return fmtUsd(0);
  return `${value < 0 ? '-' : '+'}${fmtUsd(Math.abs(value))}`;
}

const BYTE_UNITS = ['bytes', 'KB', 'MB', 'GB', 'TB'];

/** A size in bytes as people read it (1 KB = 1024 bytes): "512 bytes", "3.4 MB". */
export function fmtBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${fmtNumber(value, unit === 0 ? 0 : 1)} ${BYTE_UNITS[unit]}`;
}

/** JSON objects typed one a line into a textarea (blank lines skipped); the error names the line. */
export function parseJsonLines(text: string, what: string): Record<string, unknown>[] {
  const lines = text.split('\n').map((line, index) => ({ line: line.trim(), number: index + 1 })).filter(({ line }) => line !== '');
  if (lines.length === 0) throw new Error(`Type at least one ${what}: a JSON object on its own line.`);
  return lines.map(({ line, number }) => parseJsonObject(line, `Line ${number}`));
}
