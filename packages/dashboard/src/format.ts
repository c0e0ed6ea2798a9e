/** How the pages write times, durations, amounts and counts, and read JSON typed into a form. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const shortTime = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });

export function fmtDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

export function fmtTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : shortTime.format(date);
}

/**
 * "850 ms", "4.25 s", "4 min 0 s", "2 h 5 min", "3 d 1 h": each unit from the value rounded to the
 * smaller unit first, so 239.6 s is "4 min 0 s", never "3 min 60 s".
 */
export function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  if (Math.round(abs) < 1000) return `${sign}${Math.round(abs)} ms`;
  // Below 9.995 s two decimals, then one, until the value would read "60.0 s".
  if (abs < 59_950) return `${sign}${(abs / 1000).toFixed(abs < 9_995 ? 2 : 1)} s`;
  const seconds = Math.round(abs / 1000);
  if (seconds < 3600) return `${sign}${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  const minutes = Math.round(abs / 60_000);
  if (minutes < 1440) return `${sign}${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  const hours = Math.round(abs / 3_600_000);
  return `${sign}${Math.floor(hours / 24)} d ${hours % 24} h`;
}

export function timeAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  const rough = (d: number) => (d < 60_000 ? `${Math.round(d / 1000)} s` : fmtDuration(d).replace(/ \d+ (s|min|h)$/, ''));
  if (ms < -5_000) return `in ${rough(-ms)}`;
  if (ms < 5_000) return 'just now';
  return `${rough(ms)} ago`;
}

/**
 * Money, the one way every page writes it: "$1,234.50", "-$0.03" (the sign before the dollar),
 * "$0.0042" and "$0.000015" for amounts under a cent (two significant digits, never an exponent,
 * never the float noise of 0.000014849999999999998).
 */
export function fmtUsd(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (value === 0) return '$0';
  const sign = value < 0 ? '-' : '';
  const abs = Math.abs(value);
  if (abs < 0.01) return `${sign}$${abs.toLocaleString('en-US', { maximumSignificantDigits: 2, useGrouping: false })}`;
  return `${sign}$${abs.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

export function fmtNumber(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return value.toLocaleString(undefined, { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** A score (an evaluation's 0–1, a health score's 0–100) with two decimals: 0.6666… → "0.67". */
export function fmtScore(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return value.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

/** A change with its sign: "+1.25", "-0.50", "0.00". */
export function fmtSignedScore(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return `${value > 0 ? '+' : ''}${fmtScore(value)}`;
}

/** A change of an amount, signed: "-$0.03", "+$1.20", "$0". */
export function fmtUsdChange(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (value === 0) return fmtUsd(0);
  return `${value < 0 ? '-' : '+'}${fmtUsd(Math.abs(value))}`;
}

/** A change of a duration, signed: "+600 ms", "-1.20 s", "0 ms". */
export function fmtDurationChange(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  return `${Math.round(ms) > 0 ? '+' : ''}${fmtDuration(ms)}`;
}

/** A change of a count, signed: "+3", "-1,200", "0". */
export function fmtCountChange(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return `${value > 0 ? '+' : ''}${fmtNumber(value)}`;
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
  const lines = text
    .split('\n')
    .map((line, index) => ({ line: line.trim(), number: index + 1 }))
    .filter(({ line }) => line !== '');
  if (lines.length === 0) throw new Error(`Type at least one ${what}: a JSON object on its own line.`);
  return lines.map(({ line, number }) => parseJsonObject(line, `Line ${number}`));
}

/**
 * An evaluator's rules typed one a line, each with the `id` its violations name: the one the line
 * gives, else "rule-<n>" (counted from 1 among the rules).
 */
export function rulesWithIds(text: string): Record<string, unknown>[] {
  return parseJsonLines(text, 'rule').map((rule, index) => ({ id: `rule-${index + 1}`, ...rule }));
}

export function fmtPercent(ratio: number | null | undefined, digits = 1): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return '—';
  return `${(ratio * 100).toFixed(digits)}%`;
}

export function shortHash(hash: string | null | undefined): string {
  return hash ? `${hash.slice(0, 10)}…` : '—';
}

/** Parses a JSON object typed into a textarea; the error names the field. */
export function parseJsonObject(text: string, field: string): Record<string, unknown> {
  if (!text.trim()) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${field} is not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${field} must be a JSON object, e.g. {"amount": 10}`);
  return value as Record<string, unknown>;
}

/**
 * A time window, in the one unit every form asks for (minutes): "1 minute", "90 minutes", "2 hours",
 * "1 day". Alert rules store minutes and guardrails milliseconds; both pages write them with this.
 */
export function fmtWindow(minutes: number | null | undefined): string {
  if (minutes === null || minutes === undefined || !Number.isFinite(minutes)) return '—';
  if (minutes >= 1440 && minutes % 1440 === 0) return plural(minutes / 1440, 'day');
  if (minutes >= 60 && minutes % 60 === 0) return plural(minutes / 60, 'hour');
  return plural(Math.round(minutes * 100) / 100, 'minute');
}

/** Milliseconds as the minutes a form shows (a guardrail's stored window), and back. */
export const msToMinutes = (ms: number): number => ms / 60_000;
export const minutesToMs = (minutes: number): number => Math.round(minutes * 60_000);

/**
 * A policy rule as people count it, from 1: the gate stores and writes the rule's index from 0
 * (`ruleIndex`, and "…, rule 0" in the decision reasons it writes into the audit trail).
 */
export const fmtRule = (ruleIndex: number): string => `rule ${ruleIndex + 1}`;

const POLICY_REASON = /^(Approved|Denied) by policy "(.*)" \(([^()]+)\), rule (\d+)$/;

/**
 * A decision reason the gate wrote for a policy's auto decision, "Denied by policy "payments" (<id>),
 * rule 0", as the dashboard writes it everywhere: the policy by name and the rule counted from 1.
 * Any other reason (a person's, a budget's) is left as it is.
 */
export function fmtDecisionReason(reason: string): string {
  const match = POLICY_REASON.exec(reason);
  if (!match) return reason;
  return `${match[1]} by policy “${match[2]}”, ${fmtRule(Number(match[4]))}`;
}

/** "1 event", "3 events". */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString()} ${count === 1 ? one : many}`;
}

/** The chat platforms a gate actor can name (`slack:U123`, `discord:42`: docs/chat.md). */
const CHAT_PLATFORMS = new Map([
  ['slack', 'Slack'],
  ['discord', 'Discord'],
]);

/** Policy names by id, for the places the gate's answers name a policy by id only. */
export type PolicyNames = ReadonlyMap<string, string>;

/** A policy by name ("policy “payments”"), or by id when it is not (or no longer) known. */
export function fmtPolicy(policyId: string, names: PolicyNames | undefined): string {
  const name = names?.get(policyId);
  return name === undefined ? `policy ${policyId}` : `policy “${name}”`;
}

/**
 * Who acted, as people read it: a decision from chat, `slack:U123`, is "Slack · alice (U123)" with
 * the user name its audit entry recorded (`details.userName`), else "Slack · U123"; a policy's auto
 * decision, `policy:<id>`, is "policy “payments”" when `policies` knows it; any other actor
 * (`dashboard:Ada`, `system:expiry`) as it is.
 */
export function fmtActor(actor: string, userName?: unknown, policies?: PolicyNames): string {
  const colon = actor.indexOf(':');
  const prefix = actor.slice(0, Math.max(colon, 0));
  const id = actor.slice(colon + 1);
  if (prefix === 'policy') return fmtPolicy(id, policies);
  const platform = CHAT_PLATFORMS.get(prefix);
  if (platform === undefined) return actor;
  return typeof userName === 'string' && userName.trim() !== '' ? `${platform} · ${userName} (${id})` : `${platform} · ${id}`;
}

/** Whether an actor is a chat user (its audit entries' `details` carry `platform` and `userName`). */
export function isChatActor(actor: string): boolean {
  return CHAT_PLATFORMS.has(actor.slice(0, Math.max(actor.indexOf(':'), 0)));
}
