import { observe, type ObserveAnswer } from '../api.ts';
import { durationColumns, InlineSelect, Table, type Column } from '../components.tsx';
import { fmtDuration, fmtNumber, fmtPercent, fmtUsd } from '../format.ts';
import { Chart } from '../lazy-chart.tsx';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Async, Page, Section, Stat, Stats, useAsync } from '../ui.tsx';

const RANGES = {
  '24h': { label: 'Last 24 hours', ms: 24 * 3_600_000, granularity: 'hour' },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000, granularity: 'day' },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000, granularity: 'day' },
} as const;
type RangeKey = keyof typeof RANGES;
const RANGE_CHOICES = (Object.keys(RANGES) as RangeKey[]).map((key) => ({ value: key, label: RANGES[key].label }));

function bucketLabel(iso: string, granularity: string): string {
  const date = new Date(iso);
  return granularity === 'hour'
    ? date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

const AGENT_COLUMNS: Column<ObserveAnswer<'GET /api/analytics/agents'>['agents'][number]>[] = [
  { header: 'Agent', cell: (a) => <Link to={`/agents/${encodeURIComponent(a.agentId)}`}>{a.agentId}</Link> },
  { header: 'Sessions', num: true, cell: (a) => fmtNumber(a.sessionCount) },
  { header: 'Events', num: true, cell: (a) => fmtNumber(a.totalEvents) },
  { header: 'Error rate', num: true, cell: (a) => fmtPercent(a.errorRate) },
  { header: 'Spend', num: true, cell: (a) => fmtUsd(a.totalCostUsd) },
];

type ToolRow = ObserveAnswer<'GET /api/analytics/tools'>['tools'][number];

const TOOL_COLUMNS: Column<ToolRow>[] = [
  { header: 'Tool', cell: (t) => <code>{t.toolName}</code> },
  { header: 'Calls', num: true, cell: (t) => fmtNumber(t.callCount) },
  { header: 'Errors', num: true, cell: (t) => fmtNumber(t.errorCount) },
  { header: 'Error rate', num: true, cell: (t) => fmtPercent(t.errorRate) },
  ...durationColumns<ToolRow>('Avg duration', (t) => [t.avgDurationMs, t.p50DurationMs, t.p95DurationMs, t.p99DurationMs]),
];

export function OverviewPage() {
  const { query } = useLocation();
  const rangeKey: RangeKey = (query.get('range') as RangeKey) in RANGES ? (query.get('range') as RangeKey) : '24h';
  const range = RANGES[rangeKey];
  // The window is computed at each load, so polling moves it forward without resetting the page.
  const windowNow = () => {
    const to = new Date(Math.ceil(Date.now() / 60_000) * 60_000);
    return { from: new Date(to.getTime() - range.ms).toISOString(), to: to.toISOString() };
  };

  const analytics = useAsync((signal) => observe('GET /api/analytics', { query: { ...windowNow(), granularity: range.granularity }, signal }), [rangeKey], {
    pollMs: 30_000,
  });
  const agents = useAsync((signal) => observe('GET /api/analytics/agents', { query: windowNow(), signal }), [rangeKey], { pollMs: 60_000 });
  const tools = useAsync((signal) => observe('GET /api/analytics/tools', { query: windowNow(), signal }), [rangeKey], { pollMs: 60_000 });

  return (
    <Page
      title="Overview"
      subtitle="What your agents did: events, errors, spend and tool latency over time."
      actions={
        <InlineSelect
          id="overview-range"
          label="Time range"
          value={rangeKey}
          options={RANGE_CHOICES}
          onChange={(key) => setQuery({ range: key === '24h' ? null : key })}
        />
      }
    >
      <Async state={analytics} label="Loading analytics…">
        {(data) => {
          const labels = data.buckets.map((b) => bucketLabel(b.bucket, range.granularity));
          const t = data.totals;
          return (
            <>
              <Stats>
                <Stat label="Events" value={fmtNumber(t.eventCount)} />
                <Stat label="Tool calls" value={fmtNumber(t.toolCallCount)} />
                <Stat label="Errors" value={fmtNumber(t.errorCount)} hint={t.eventCount ? `${fmtPercent(t.errorCount / t.eventCount)} of events` : undefined} />
                <Stat label="Spend" value={fmtUsd(t.totalCostUsd)} />
                <Stat label="Avg tool latency" value={fmtDuration(t.avgLatencyMs)} />
                <Stat
                  label="Tool latency p50 / p95 / p99"
                  value={t.p50LatencyMs === null ? '—' : `${fmtDuration(t.p50LatencyMs)} / ${fmtDuration(t.p95LatencyMs)} / ${fmtDuration(t.p99LatencyMs)}`}
                  hint="within 1 %"
                />
              </Stats>
              {t.eventCount === 0 ? (
                <Section title="Activity">
                  <p className="empty">
                    No events in this range yet. Send some with <code>POST /api/events</code> (see the README) and they show up here within seconds.
                  </p>
                </Section>
              ) : (
                <div className="grid-2">
                  <Section title="Events and errors">
                    <Chart
                      kind="line"
                      labels={labels}
                      series={[
                        { label: 'Events', data: data.buckets.map((b) => b.eventCount), color: '--chart-blue' },
                        { label: 'Errors', data: data.buckets.map((b) => b.errorCount), color: '--chart-red' },
                      ]}
                      description={`Events and errors per ${range.granularity}: ${fmtNumber(t.eventCount)} events and ${fmtNumber(t.errorCount)} errors in total.`}
                    />
                  </Section>
                  <Section title="Spend">
                    <Chart
                      kind="bar"
                      labels={labels}
                      series={[{ label: 'Spend (USD)', data: data.buckets.map((b) => b.totalCostUsd), color: '--chart-violet' }]}
                      format={fmtUsd}
                      description={`Spend per ${range.granularity}; ${fmtUsd(t.totalCostUsd)} in total.`}
                    />
                  </Section>
                  <Section title="Tool latency">
                    <Chart
                      kind="line"
                      labels={labels}
                      series={[{ label: 'Average tool latency', data: data.buckets.map((b) => b.avgLatencyMs), color: '--chart-cyan' }]}
                      format={(v) => fmtDuration(v)}
                      description={`Average tool call latency per ${range.granularity}; ${fmtDuration(t.avgLatencyMs)} over the range.`}
                    />
                  </Section>
                  <Section title="Tool calls">
                    <Chart
                      kind="bar"
                      labels={labels}
                      series={[{ label: 'Tool calls', data: data.buckets.map((b) => b.toolCallCount), color: '--chart-green' }]}
                      description={`Tool calls per ${range.granularity}; ${fmtNumber(t.toolCallCount)} in total.`}
                    />
                  </Section>
                </div>
              )}
            </>
          );
        }}
      </Async>
      <div className="grid-2">
        <Section title="Top agents">
          <Async state={agents} isEmpty={(d) => d.agents.length === 0} empty="No agent started a session in this range.">
            {(data) => (
              <Table rows={[...data.agents].sort((x, y) => y.totalEvents - x.totalEvents).slice(0, 8)} columns={AGENT_COLUMNS} rowKey={(a) => a.agentId} />
            )}
          </Async>
        </Section>
        <Section title="Top tools">
          <Async state={tools} isEmpty={(d) => d.tools.length === 0} empty="No tool calls in this range.">
            {(data) => <Table rows={[...data.tools].sort((x, y) => y.callCount - x.callCount).slice(0, 8)} columns={TOOL_COLUMNS} rowKey={(t) => t.toolName} />}
          </Async>
        </Section>
      </div>
    </Page>
  );
}
