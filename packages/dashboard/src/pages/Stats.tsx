import { observe } from '../api.ts';
import { fmtBytes, fmtDateTime, fmtNumber, fmtUsd, timeAgo } from '../format.ts';
import { Async, Page, Section, Stat, Stats, useAsync } from '../ui.tsx';

export function StatsPage() {
  const stats = useAsync((signal) => observe('GET /api/stats', { signal }), [], { pollMs: 30_000 });
  return (
    <Page
      title="Storage and spend"
      subtitle="What observe holds, how much room it takes, and what the AI judge of evaluations has cost (never part of any session’s spend)."
    >
      <Section title="Stored">
        <Async state={stats} label="Counting…">
          {(s) => (
            <Stats>
              <Stat label="Events" value={fmtNumber(s.totalEvents)} />
              <Stat label="Sessions" value={fmtNumber(s.totalSessions)} />
              <Stat label="Agents" value={fmtNumber(s.totalAgents)} />
              <Stat label="Database size" value={fmtBytes(s.storageSizeBytes)} hint={`${fmtNumber(s.storageSizeBytes)} bytes`} />
              <Stat label="Oldest event" value={timeAgo(s.oldestEvent)} hint={fmtDateTime(s.oldestEvent)} />
              <Stat label="Newest event" value={timeAgo(s.newestEvent)} hint={fmtDateTime(s.newestEvent)} />
              <Stat label="AI judge spend" value={fmtUsd(s.judgeSpendUsd)} hint="all evaluations so far" />
            </Stats>
          )}
        </Async>
      </Section>
    </Page>
  );
}
