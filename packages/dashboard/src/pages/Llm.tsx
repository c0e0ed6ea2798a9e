import { observe } from '../api.ts';
import { InlineSelect } from '../components.tsx';
import { fmtDuration, fmtNumber, fmtUsd } from '../format.ts';
import { setQuery, useLocation } from '../router.tsx';
import { Async, Page, Section, Stat, Stats, useAsync } from '../ui.tsx';

const RANGES = {
  '24h': { label: 'Last 24 hours', ms: 24 * 3_600_000 },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000 },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000 },
} as const;
type RangeKey = keyof typeof RANGES;
const RANGE_CHOICES = (Object.keys(RANGES) as RangeKey[]).map((key) => ({ value: key, label: RANGES[key].label }));

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
      subtitle="Spend, tokens and latency per model. Latency percentiles are within 1 % of the exact values."
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
                  <table data-testid="llm-models">
                    <thead>
                      <tr>
                        <th scope="col">Provider</th>
                        <th scope="col">Model</th>
                        <th scope="col" className="num">
                          Calls
                        </th>
                        <th scope="col" className="num">
                          Spend
                        </th>
                        <th scope="col" className="num">
                          Input tokens
                        </th>
                        <th scope="col" className="num">
                          Output tokens
                        </th>
                        <th scope="col" className="num">
                          Avg latency
                        </th>
                        <th scope="col" className="num">
                          p50
                        </th>
                        <th scope="col" className="num">
                          p95
                        </th>
                        <th scope="col" className="num">
                          p99
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {data.byModel.map((m) => (
                        <tr key={`${m.provider}/${m.model}`}>
                          <td>{m.provider || '—'}</td>
                          <td>
                            <code>{m.model || '—'}</code>
                          </td>
                          <td className="num">{fmtNumber(m.calls)}</td>
                          <td className="num">{fmtUsd(m.costUsd)}</td>
                          <td className="num">{fmtNumber(m.inputTokens)}</td>
                          <td className="num">{fmtNumber(m.outputTokens)}</td>
                          <td className="num">{fmtDuration(m.avgLatencyMs)}</td>
                          <td className="num">{fmtDuration(m.p50LatencyMs)}</td>
                          <td className="num">{fmtDuration(m.p95LatencyMs)}</td>
                          <td className="num">{fmtDuration(m.p99LatencyMs)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                )}
              </Section>
            </>
          );
        }}
      </Async>
    </Page>
  );
}
