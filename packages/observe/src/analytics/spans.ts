// The spans the analytics tables are kept at: each table's rows sum its events (or sessions) over
// one span, keyed by the span's start in `hour`. A report reads a range as whole days, then whole
// hours, then the events of a cut hour (aggregate.ts readRange), so that it reads a row per key
// and day instead of a row per key and hour over long ranges.
import { DAY_MS, HOUR_MS } from '@vigil/platform';

export interface Span {
  ms: number;
  /** What a row sums over, as listings and findings name it. */
  adjective: 'hourly' | 'daily';
  /** Added to the hourly tables' listing path and operationId for this span's (GET /api/audit/derived/{path}). */
  listed: { pathSuffix: string; operationWord: string };
  rollups: 'event_rollups' | 'event_rollups_daily';
  sketches: 'latency_sketches' | 'latency_sketches_daily';
  sessions: 'agent_session_hours' | 'agent_session_days';
}

export const HOURLY: Span = {
  ms: HOUR_MS,
  adjective: 'hourly',
  listed: { pathSuffix: '', operationWord: '' },
  rollups: 'event_rollups',
  sketches: 'latency_sketches',
  sessions: 'agent_session_hours',
};
export const DAILY: Span = {
  ms: DAY_MS,
  adjective: 'daily',
  listed: { pathSuffix: '-daily', operationWord: 'Daily' },
  rollups: 'event_rollups_daily',
  sketches: 'latency_sketches_daily',
  sessions: 'agent_session_days',
};

/** Coarsest first: the order a range is split in. */
export const SPANS = [DAILY, HOURLY] as const;

/** Start of the span holding `ms`. */
export const spanStart = (ms: number, span: Span): number => Math.floor(ms / span.ms) * span.ms;
