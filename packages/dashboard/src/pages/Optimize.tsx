import type { ObserveSchemas } from '@vigil/sdk/types';
import { observe } from '../api.ts';
import { AsyncTable, AgentFilters, InlineSelect, type Column } from '../components.tsx';
import { fmtNumber, fmtPercent, fmtUsd, fmtUsdChange, plural } from '../format.ts';
import { Link, setQuery, useLocation } from '../router.tsx';
import { Async, Badge, Page, Section, Stat, Stats, useAsync, type Tone } from '../ui.tsx';

type Recommendation = ObserveSchemas.OptimizeRecommendation;

const PERIODS = [1, 7, 30, 90].map((days) => ({ value: days, label: `Last ${plural(days, 'day')}` }));
const CONFIDENCE_TONES: Record<Recommendation['confidence'], Tone> = { high: 'good', medium: 'info', low: 'neutral' };

const COLUMNS: Column<Recommendation>[] = [
  { header: 'Agent', cell: (r) => <Link to={`/agents/${encodeURIComponent(r.agentId)}`}>{r.agentId}</Link> },
  { header: 'Task complexity', cell: (r) => r.complexityTier },
  { header: 'Now', rowHeader: true, cell: (r) => r.currentModel },
  { header: 'Switch to', cell: (r) => <strong>{r.recommendedModel}</strong> },
  { header: 'Cost per call', num: true, cell: (r) => `${fmtUsd(r.currentCostPerCall)} → ${fmtUsd(r.recommendedCostPerCall)}` },
  { header: 'Change per call', num: true, cell: (r) => fmtUsdChange(r.recommendedCostPerCall - r.currentCostPerCall) },
  { header: 'Success rate', num: true, cell: (r) => `${fmtPercent(r.currentSuccessRate)} → ${fmtPercent(r.recommendedSuccessRate)}` },
  { header: 'Calls', num: true, cell: (r) => fmtNumber(r.callVolume) },
  { header: 'Confidence', cell: (r) => <Badge tone={CONFIDENCE_TONES[r.confidence]}>{r.confidence}</Badge> },
  { header: 'Saves a month', num: true, cell: (r) => <strong>{fmtUsd(r.monthlySavings)}</strong> },
];

export function OptimizePage() {
  const { query } = useLocation();
  const period = PERIODS.find((p) => String(p.value) === query.get('period'))?.value ?? 7;
  const agentId = query.get('agent') ?? '';
  const advice = useAsync(
    (signal) => observe('GET /api/optimize/recommendations', { query: { period, agentId: agentId || undefined, limit: 50 }, signal }),
    [period, agentId],
  );
  return (
    <Page
      title="Cost advice"
      subtitle="Cheaper models of the same provider for each agent, model and task complexity, when the cheaper model succeeds at least as often in that tier. Savings are estimated for 30 days at the period’s call volume."
    >
      <AgentFilters id="optimize-agent" agentId={agentId}>
        <InlineSelect id="optimize-period" label="Calls of the" value={period} options={PERIODS} onChange={(days) => setQuery({ period: String(days) })} />
      </AgentFilters>
      <Section title="Potential savings">
        <Async state={advice} label="Analysing LLM calls…">
          {(a) => (
            <Stats>
              <Stat label="Potential savings a month" value={fmtUsd(a.totalPotentialSavings)} hint={plural(a.recommendations.length, 'recommendation')} />
              <Stat label="LLM calls analysed" value={fmtNumber(a.analyzedCalls)} hint={`in the last ${plural(a.period, 'day')}`} />
            </Stats>
          )}
        </Async>
      </Section>
      <Section title="Recommendations">
        <AsyncTable
          state={advice}
          rows={(a) => a.recommendations}
          empty="No cheaper model to recommend: a group needs at least 20 calls, and a candidate must cost less at the same token mix without failing more often."
          columns={COLUMNS}
          rowKey={(r) => `${r.agentId}\n${r.currentModel}\n${r.complexityTier}`}
          testId="recommendations"
        />
      </Section>
    </Page>
  );
}
