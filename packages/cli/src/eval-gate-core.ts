/**
 * Pure parts of `vigil eval-gate`: option resolution, pass-rate arithmetic and text rendering.
 * No I/O here, so each rule is tested directly.
 */

export const EXIT_PASS = 0;
/** The pass rate is below the minimum, or a session's hash chain is broken. */
export const EXIT_BELOW_THRESHOLD = 1;
/** Usage errors, connection and HTTP errors, a dataset run that did not finish in time, nothing to evaluate. */
export const EXIT_ERROR = 2;

export const DEFAULT_URL = 'http://localhost:3400';
export const DEFAULT_LIMIT = 20;
/** The observe service's own cap on GET /api/sessions `limit`. */
export const MAX_LIMIT = 500;
export const DEFAULT_TIMEOUT_SECONDS = 300;
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 60;
export const DEFAULT_CONCURRENCY = 4;
export const MAX_CONCURRENCY = 16;
/** The observe service's bound on a dataset run's per-case webhook timeout. */
export const MAX_CASE_TIMEOUT_SECONDS = 600;
/** Longest identifier the observe service accepts. */
const MAX_ID_LENGTH = 256;

/** Options as commander hands them over: every value is the raw string the user typed. */
export interface RawGateOptions {
  url?: string;
  evaluatorId?: string;
  sessionIds?: string;
  agentId?: string;
  limit?: string;
  datasetId?: string;
  webhookUrl?: string;
  minPassRate?: string;
  timeoutSeconds?: string;
  caseTimeoutSeconds?: string;
  requestTimeoutSeconds?: string;
  concurrency?: string;
  json?: boolean;
}

interface CommonPlan {
  /** Base address without a trailing slash. */
  url: string;
  /** From VIGIL_API_KEY only; undefined sends no Authorization header. */
  apiKey: string | undefined;
  minPassRate: number;
  requestTimeoutMs: number;
  json: boolean;
}

export interface TracePlan extends CommonPlan {
  mode: 'trace';
  evaluatorId: string;
  /** Either an explicit list of sessions, or the newest `limit` sessions of an agent. */
  sessions: { kind: 'ids'; ids: string[] } | { kind: 'agent'; agentId: string; limit: number };
  concurrency: number;
}

export interface DatasetPlan extends CommonPlan {
  mode: 'dataset';
  datasetId: string;
  agentId: string;
  webhookUrl: string;
  evaluatorId: string | undefined;
  timeoutMs: number;
  /** How long the server waits for the agent webhook per case; undefined leaves the server's default. */
  caseTimeoutSeconds: number | undefined;
}

export type GatePlan = TracePlan | DatasetPlan;

export class UsageError extends Error {
  override name = 'UsageError';
}

function present(value: string | undefined): value is string {
  return value !== undefined;
}

function identifier(value: string, option: string): string {
  const trimmed = value.trim();
  if (trimmed === '') throw new UsageError(`${option} must not be empty`);
  if (trimmed.length > MAX_ID_LENGTH) throw new UsageError(`${option} is longer than ${MAX_ID_LENGTH} characters`);
  return trimmed;
}

/** A decimal number as typed: no hex, no exponent surprises, no empty string (which Number() reads as 0). */
function decimal(value: string, option: string): number {
  const trimmed = value.trim();
  if (!/^[+-]?(\d+\.?\d*|\.\d+)$/.test(trimmed)) throw new UsageError(`${option} must be a number, got "${value}"`);
  return Number(trimmed);
}

function integerIn(value: string, option: string, min: number, max: number): number {
  const trimmed = value.trim();
  if (!/^\+?\d+$/.test(trimmed)) throw new UsageError(`${option} must be a whole number, got "${value}"`);
  const n = Number(trimmed);
  if (n < min || n > max) throw new UsageError(`${option} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function secondsIn(value: string, option: string, max: number): number {
  const n = decimal(value, option);
  if (n <= 0 || n > max) throw new UsageError(`${option} must be more than 0 and at most ${max} seconds, got ${value.trim()}`);
  return n;
}

export function parsePassRate(value: string): number {
  const n = decimal(value, '--min-pass-rate');
  if (n < 0 || n > 1) throw new UsageError(`--min-pass-rate must be between 0 and 1 (a fraction, e.g. 0.8), got ${value.trim()}`);
  return n;
}

function parseHttpUrl(value: string, what: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(value.trim());
  } catch {
    throw new UsageError(`${what} is not a URL: "${value}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`${what} must be an http:// or https:// URL, got "${value}"`);
  }
  return parsed;
}

/** The server's base address: http(s), no query or fragment, returned without a trailing slash (paths are appended). */
export function baseUrl(value: string, what: string): string {
  const parsed = parseHttpUrl(value, what);
  if (parsed.search || parsed.hash) throw new UsageError(`${what} must not carry a query string or fragment: "${value}"`);
  return parsed.toString().replace(/\/+$/, '');
}

/** A URL the server calls (the agent webhook): checked to be http(s), passed on as typed. */
export function webhookUrl(value: string, what: string): string {
  parseHttpUrl(value, what);
  return value.trim();
}

/** `a, b,,c,a` → `[a, b, c]`: trimmed, empties dropped, duplicates removed (first occurrence kept). */
export function parseSessionIds(value: string): string[] {
  const ids = [
    ...new Set(
      value
        .split(',')
        .map((id) => id.trim())
        .filter((id) => id !== ''),
    ),
  ];
  if (ids.length === 0) throw new UsageError('--session-ids must name at least one session (comma-separated)');
  for (const id of ids) identifier(id, `session id "${id.slice(0, 40)}…"`);
  return ids;
}

const TRACE_ONLY = [
  ['sessionIds', '--session-ids'],
  ['limit', '--limit'],
  ['concurrency', '--concurrency'],
] as const;
const DATASET_ONLY = [
  ['webhookUrl', '--webhook-url'],
  ['timeoutSeconds', '--timeout-seconds'],
  ['caseTimeoutSeconds', '--case-timeout-seconds'],
] as const;

/**
 * Turns the raw options and the environment into a plan, or throws a UsageError that names the
 * offending option. The mode is dataset mode when --dataset-id is given, trace scoring otherwise;
 * an option of the other mode is refused rather than ignored.
 */
export function resolveGateOptions(raw: RawGateOptions, env: NodeJS.ProcessEnv): GatePlan {
  const url = baseUrl(
    raw.url ?? (env.VIGIL_URL?.trim() || DEFAULT_URL),
    raw.url !== undefined ? '--url' : env.VIGIL_URL?.trim() ? 'VIGIL_URL' : 'the default URL',
  );
  const apiKey = env.VIGIL_API_KEY?.trim() || undefined;
  const requestTimeoutMs =
    1000 * (present(raw.requestTimeoutSeconds) ? secondsIn(raw.requestTimeoutSeconds, '--request-timeout-seconds', 3600) : DEFAULT_REQUEST_TIMEOUT_SECONDS);
  const json = raw.json === true;

  const datasetMode = present(raw.datasetId);
  if (!datasetMode && !present(raw.evaluatorId) && !present(raw.sessionIds) && !present(raw.agentId)) {
    throw new UsageError(
      'choose a mode: trace scoring (--evaluator-id with --session-ids, or with --agent-id [--limit]) or dataset run (--dataset-id, --agent-id, --webhook-url)',
    );
  }
  if (datasetMode) {
    for (const [key, flag] of TRACE_ONLY) {
      if (present(raw[key])) throw new UsageError(`${flag} belongs to trace scoring mode and cannot be combined with --dataset-id`);
    }
  } else {
    for (const [key, flag] of DATASET_ONLY) {
      if (present(raw[key])) throw new UsageError(`${flag} belongs to dataset mode: add --dataset-id, or drop ${flag}`);
    }
  }
  if (!present(raw.minPassRate)) throw new UsageError('--min-pass-rate is required (a fraction from 0 to 1, e.g. 0.8)');
  const minPassRate = parsePassRate(raw.minPassRate);
  const common = { url, apiKey, minPassRate, requestTimeoutMs, json };

  if (datasetMode) {
    const datasetId = identifier(raw.datasetId!, '--dataset-id');
    if (!present(raw.agentId)) throw new UsageError('dataset mode needs --agent-id (the agent the dataset cases are sent to)');
    if (!present(raw.webhookUrl)) throw new UsageError('dataset mode needs --webhook-url (the agent webhook that runs each case)');
    return {
      ...common,
      mode: 'dataset',
      datasetId,
      agentId: identifier(raw.agentId, '--agent-id'),
      webhookUrl: webhookUrl(raw.webhookUrl, '--webhook-url'),
      evaluatorId: present(raw.evaluatorId) ? identifier(raw.evaluatorId, '--evaluator-id') : undefined,
      timeoutMs: 1000 * (present(raw.timeoutSeconds) ? secondsIn(raw.timeoutSeconds, '--timeout-seconds', 86_400) : DEFAULT_TIMEOUT_SECONDS),
      caseTimeoutSeconds: present(raw.caseTimeoutSeconds)
        ? integerIn(raw.caseTimeoutSeconds, '--case-timeout-seconds', 1, MAX_CASE_TIMEOUT_SECONDS)
        : undefined,
    };
  }

  if (!present(raw.evaluatorId)) throw new UsageError('trace scoring needs --evaluator-id (a saved evaluator, see POST /api/evaluators)');
  const evaluatorId = identifier(raw.evaluatorId, '--evaluator-id');
  if (present(raw.sessionIds) && present(raw.agentId)) {
    throw new UsageError('use either --session-ids or --agent-id (with --limit), not both');
  }
  if (!present(raw.sessionIds) && !present(raw.agentId)) {
    throw new UsageError('trace scoring needs the sessions to score: --session-ids a,b,c or --agent-id <id> [--limit <n>]');
  }
  if (present(raw.limit) && !present(raw.agentId)) throw new UsageError('--limit applies to --agent-id only');
  const concurrency = present(raw.concurrency) ? integerIn(raw.concurrency, '--concurrency', 1, MAX_CONCURRENCY) : DEFAULT_CONCURRENCY;
  const sessions: TracePlan['sessions'] = present(raw.sessionIds)
    ? { kind: 'ids', ids: parseSessionIds(raw.sessionIds) }
    : {
        kind: 'agent',
        agentId: identifier(raw.agentId!, '--agent-id'),
        limit: present(raw.limit) ? integerIn(raw.limit, '--limit', 1, MAX_LIMIT) : DEFAULT_LIMIT,
      };
  return { ...common, mode: 'trace', evaluatorId, sessions, concurrency };
}

export interface Verdict {
  passed: number;
  total: number;
  passRate: number;
  minPassRate: number;
  ok: boolean;
}

/** passed / total against the threshold, inclusive (a rate equal to the minimum passes). total must be > 0. */
export function verdict(passed: number, total: number, minPassRate: number): Verdict {
  if (!Number.isInteger(total) || total <= 0) throw new RangeError('a pass rate needs at least one evaluated item');
  if (!Number.isInteger(passed) || passed < 0 || passed > total) throw new RangeError(`passed must be within 0..${total}`);
  const passRate = passed / total;
  return { passed, total, passRate, minPassRate, ok: passRate >= minPassRate };
}

/**
 * Two decimals when they say it exactly, up to four otherwise: 0.85 → "0.85", 1 → "1.00",
 * 2/3 → "0.6667". So a failing 0.6667 against a required 0.67 never prints as "0.67 … 0.67: FAIL".
 */
export function formatRate(rate: number): string {
  for (let digits = 2; digits < 4; digits++) {
    const text = rate.toFixed(digits);
    if (Number(text) === rate) return text;
  }
  return rate.toFixed(4);
}

export function verdictLine(v: Verdict): string {
  return `pass rate ${formatRate(v.passRate)} (${v.passed}/${v.total}), required ${formatRate(v.minPassRate)}: ${v.ok ? 'PASS' : 'FAIL'}`;
}

/** A session whose hash chain does not verify (GET /api/audit/verify): the gate fails on it whatever the pass rate. */
export interface BrokenChain {
  sessionId: string;
  /** Where the chain breaks, as the server names it; null when it does not say. */
  brokenAt: { seq: number; eventId: string | null; reason: string } | null;
}

export function brokenChainLine(broken: BrokenChain): string {
  const at = broken.brokenAt;
  const where = at === null ? '' : ` at seq ${at.seq}${at.eventId === null ? '' : ` (event ${at.eventId})`}: ${at.reason}`;
  return `the hash chain of session ${broken.sessionId} is broken${where}`;
}

/** One line, at most `max` characters; longer text ends with an ellipsis. */
export function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  return max <= 1 ? flat.slice(0, max) : `${flat.slice(0, max - 1)}…`;
}

export function formatScore(score: number | null | undefined): string {
  return typeof score === 'number' && Number.isFinite(score) ? score.toFixed(2) : '-';
}

export function resultLabel(passed: boolean | null | undefined, error?: string | null): string {
  if (error) return 'ERROR';
  if (passed === true) return 'PASS';
  if (passed === false) return 'FAIL';
  return 'PENDING';
}

/**
 * A plain-text table: header, a dashed rule, one row per entry; each column as wide as its widest
 * cell (cells already truncated by the caller). Trailing spaces are trimmed.
 */
export function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Whether to draw a live, self-rewriting progress line: only on a terminal, and never in CI. */
export function liveProgressWanted(isTTY: boolean | undefined, env: NodeJS.ProcessEnv): boolean {
  const ci = env.CI?.trim().toLowerCase();
  const inCi = ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0';
  return isTTY === true && !inCi;
}
