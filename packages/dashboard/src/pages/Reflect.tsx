import type { ObserveSchemas } from '@vigil/sdk/types';
import { observe, type ObserveQuery } from '../api.ts';
import { AgentFilters, InlineSelect, Table, type Column } from '../components.tsx';
import { fmtDateTime, fmtDuration, fmtNumber, fmtPercent, fmtScore, fmtUsd, plural, timeAgo } from '../format.ts';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Async, Empty, Page, Section, Stat, Stats, StatusBadge, useAsync } from '../ui.tsx';

type Analysis = ObserveQuery<'GET /api/reflect'>['analysis'];
type Insight = ObserveSchemas.ReflectInsight;
type InsightOf<T extends Insight['type']> = Extract<Insight, { type: T }>;

const ANALYSES: { value: Analysis; label: string }[] = [
  { value: 'error_patterns', label: 'Error patterns' },
  { value: 'tool_sequences', label: 'Tool sequences' },
  { value: 'cost_analysis', label: 'Cost by model' },
  { value: 'performance_trends', label: 'Performance trend' },
];
const RANGES = [1, 7, 30].map((days) => ({ value: days, label: `Last ${plural(days, 'day')}` }));
const DAY_MS = 86_400_000;

const confidence: Column<Insight> = { header: 'Confidence', num: true, cell: (i) => fmtScore(i.confidence) };
const sessionLink = (id: string) => (
  <Link key={id} to={`/sessions/${encodeURIComponent(id)}`}>
    {id}
  </Link>
);

const ERROR_COLUMNS: Column<InsightOf<'error_pattern'>>[] = [
  { header: 'Error', rowHeader: true, className: 'clip', title: (i) => i.data.pattern, cell: (i) => i.data.pattern },
  { header: 'Times', num: true, cell: (i) => fmtNumber(i.data.count) },
  { header: 'First seen', title: (i) => fmtDateTime(i.data.firstSeen), cell: (i) => timeAgo(i.data.firstSeen) },
  { header: 'Last seen', title: (i) => fmtDateTime(i.data.lastSeen), cell: (i) => timeAgo(i.data.lastSeen) },
  {
    header: 'Most often after',
    cell: (i) => (i.data.precedingTools[0] ? i.data.precedingTools[0].join(' → ') : <span className="muted">no earlier tool call</span>),
  },
  {
    header: 'Sessions',
    cell: (i) => (
      <span className="row">
        {i.data.affectedSessions.slice(0, 3).map(sessionLink)}
        {i.data.affectedSessions.length > 3 && <span className="muted">+{i.data.affectedSessions.length - 3} more</span>}
      </span>
    ),
  },
  confidence,
];

const SEQUENCE_COLUMNS: Column<InsightOf<'tool_sequence'>>[] = [
  { header: 'Tools in a row', rowHeader: true, cell: (i) => i.data.tools.join(' → ') },
  { header: 'Runs', num: true, cell: (i) => fmtNumber(i.data.frequency) },
  { header: 'Sessions', num: true, cell: (i) => fmtNumber(i.data.sessions) },
  { header: 'Hit a tool error', num: true, cell: (i) => fmtPercent(i.data.errorRate) },
  confidence,
];

const MODEL_COLUMNS: Column<InsightOf<'model_cost'>>[] = [
  { header: 'Model', rowHeader: true, cell: (i) => i.data.model },
  { header: 'Calls', num: true, cell: (i) => fmtNumber(i.data.callCount) },
  { header: 'Spend', num: true, cell: (i) => fmtUsd(i.data.totalCost) },
  { header: 'Per call', num: true, cell: (i) => fmtUsd(i.data.avgCostPerCall) },
  confidence,
];

const ofType = <T extends Insight['type']>(insights: readonly Insight[], type: T) => insights.filter((i): i is InsightOf<T> => i.type === type);

/** The insights of one answer, each type as a person reads it: tables of patterns, figures of a summary. */
function Insights({ insights }: { insights: readonly Insight[] }) {
  if (insights.length === 0) return <Empty>Nothing found in this range: no events of this kind were logged.</Empty>;
  const errors = ofType(insights, 'error_pattern');
  const sequences = ofType(insights, 'tool_sequence');
  const models = ofType(insights, 'model_cost');
  const cost = ofType(insights, 'cost_summary')[0];
  const performance = ofType(insights, 'performance_stats')[0];
  const assessment = ofType(insights, 'performance_assessment')[0];
  return (
    <>
      {errors.length > 0 && <Table rows={errors} columns={ERROR_COLUMNS} rowKey={(i) => i.data.pattern} testId="error-patterns" caption="Error patterns" />}
      {sequences.length > 0 && (
        <Table rows={sequences} columns={SEQUENCE_COLUMNS} rowKey={(i) => i.data.tools.join('\n')} testId="tool-sequences" caption="Tool sequences" />
      )}
      {cost && (
        <Stats>
          <Stat label="Spend" value={fmtUsd(cost.data.totalCost)} hint={plural(cost.data.totalSessions, 'session')} />
          <Stat label="Per session" value={fmtUsd(cost.data.avgPerSession)} />
        </Stats>
      )}
      {models.length > 0 && <Table rows={models} columns={MODEL_COLUMNS} rowKey={(i) => i.data.model} testId="model-costs" caption="Spend by model" />}
      {performance && (
        <Stats>
          <Stat label="Success rate" value={fmtPercent(performance.data.successRate)} />
          <Stat label="Session duration" value={fmtDuration(performance.data.avgDuration)} hint="mean" />
          <Stat label="Tool calls per session" value={fmtNumber(performance.data.avgToolCalls, 1)} />
          <Stat label="Errors per session" value={fmtNumber(performance.data.avgErrors, 1)} />
          {assessment && (
            <Stat label="Trend" value={<StatusBadge status={assessment.data.assessment} />} hint={`confidence ${fmtScore(assessment.confidence)}`} />
          )}
        </Stats>
      )}
      <ul className="small" aria-label="In words">
        {insights.map((i, index) => (
          <li key={index}>{i.summary}</li>
        ))}
      </ul>
    </>
  );
}

export function ReflectPage() {
  const { query } = useLocation();
  // Unknown values in the URL fall back to the defaults rather than to a refused request.
  const analysis = ANALYSES.find((a) => a.value === query.get('analysis'))?.value ?? 'error_patterns';
  const days = RANGES.find((r) => String(r.value) === query.get('days'))?.value ?? 7;
  const agentId = query.get('agent') ?? '';
  const answer = useAsync(
    (signal) => {
      const to = Date.now();
      return observe('GET /api/reflect', {
        query: { analysis, agentId: agentId || undefined, from: new Date(to - days * DAY_MS).toISOString(), to: new Date(to).toISOString(), limit: 20 },
        signal,
      });
    },
    [analysis, days, agentId],
  );
  const label = ANALYSES.find((a) => a.value === analysis)!.label;
  return (
    <Page
      title="Insights"
      subtitle="Patterns in the logged events: recurring errors and what came before them, tool sequences that fail, spend by model, and whether sessions are getting better."
    >
      <AgentFilters id="reflect-agent" agentId={agentId}>
        <InlineSelect id="reflect-analysis" label="Analysis" value={analysis} options={ANALYSES} onChange={(value) => setQuery({ analysis: value })} />
        <InlineSelect id="reflect-range" label="Events of the" value={days} options={RANGES} onChange={(value) => setQuery({ days: String(value) })} />
      </AgentFilters>
      <Section title={label}>
        <Async state={answer} label="Analysing events…">
          {(a) => (
            <>
              <p className="muted small" data-testid="reflect-metadata">
                {plural(a.metadata.eventsAnalyzed, 'event')} of {plural(a.metadata.sessionsAnalyzed, 'session')} from {fmtDateTime(a.metadata.timeRange.from)}{' '}
                to {fmtDateTime(a.metadata.timeRange.to)}.
              </p>
              <Insights insights={a.insights} />
            </>
          )}
        </Async>
      </Section>
    </Page>
  );
}
