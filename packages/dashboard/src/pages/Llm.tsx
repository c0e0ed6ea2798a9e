import { observe, type ObserveAnswer } from '../api.ts';
import { durationColumns, InlineSelect, Table, type Column } from '../components.tsx';
import { fmtDuration, fmtNumber, fmtUsd } from '../format.ts';
import { setQuery, useLocation } from '../router.tsx';
import { Async, Page, Section, Stat, Stats, useAsync } from '../ui.tsx';
import { LlmCallList } from './LlmCalls.tsx';

const RANGES = {
  '24h': { label: 'Last 24 hours', ms: 24 * 3_600_000 },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000 },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000 },
} as const;
type RangeKey = keyof typeof RANGES;
const RANGE_CHOICES = (Object.keys(RANGES) as RangeKey[]).map((key) => ({ value: key, label: RANGES[key].label }));

type ModelRow = ObserveAnswer<'GET /api/analytics/llm'>['byModel'][number];

const MODEL_COLUMNS: Column<ModelRow>[] = [
  { header: 'Provider', cell: (m) => m.provider || '—' },
  { header: 'Model', cell: (m) => <code>{m.model || '—'}</code> },
  { header: 'Calls', num: true, cell: (m) => fmtNumber(m.calls) },
  { header: 'Spend', num: true, cell: (m) => fmtUsd(m.costUsd) },
  { header: 'Input tokens', num: true, cell: (m) => fmtNumber(m.inputTokens) },
  { header: 'Output tokens', num: true, cell: (m) => fmtNumber(m.outputTokens) },
  ...durationColumns<ModelRow>('Avg latency', (m) => [m.avgLatencyMs, m.p50LatencyMs, m.p95LatencyMs, m.p99LatencyMs]),
];

/** LLM calls (llm_response events): spend, tokens and latency percentiles per model. */
export function LlmPage() {
  const { query } = useLocation();
  const rangeKey: RangeKey = (query.get('range') as RangeKey) in RANGES ? (query.get('range') as RangeKey) : '24h';
  const range = RANGES[rangeKey];
  const llm = useAsync(
    (signal) => {
      const to = new Date(Math.ceil(Date.now() / 60_000) * 60_000);
      return observe('GET /api/analytics/llm', {
        query: { from: new Date(to.getTime() - range.ms).toISOString(), to: to.toISOString(), granularity: 'day' },
        signal,
      });
    },
    [rangeKey],
    { pollMs: 60_000 },
  );
  return (
    <Page
      title="LLM calls"
      subtitle="Spend, tokens and latency per model, and the calls themselves. Latency percentiles are within 1 % of the exact values."
      actions={
        <InlineSelect
          id="llm-range"
          label="Time range"
          value={rangeKey}
          options={RANGE_CHOICES}
          onChange={(key) => setQuery({ range: key === '24h' ? null : key })}
        />
      }
    >
      <Async state={llm} label="Loading LLM calls…">
        {(data) => {
          const s = data.summary;
          return (
            <>
              <Stats>
                <Stat label="Calls" value={fmtNumber(s.totalCalls)} />
                <Stat label="Spend" value={fmtUsd(s.totalCostUsd)} hint={`${fmtUsd(s.avgCostPerCall)} per call`} />
                <Stat label="Input tokens" value={fmtNumber(s.totalInputTokens)} />
                <Stat label="Output tokens" value={fmtNumber(s.totalOutputTokens)} />
                <Stat
                  label="Latency p50 / p95 / p99"
                  value={s.p50LatencyMs === null ? '—' : `${fmtDuration(s.p50LatencyMs)} / ${fmtDuration(s.p95LatencyMs)} / ${fmtDuration(s.p99LatencyMs)}`}
                />
              </Stats>
              <Section title="By model">
                {data.byModel.length === 0 ? (
                  <p className="empty">No LLM calls in this range.</p>
                ) : (
                  <Table rows={data.byModel} columns={MODEL_COLUMNS} rowKey={(m) => `${m.provider}/${m.model}`} testId="llm-models" />
                )}
              </Section>
            </>
          );
        }}
      </Async>
      <LlmCallList />
    </Page>
  );
}
