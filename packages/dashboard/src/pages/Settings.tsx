import { useState } from 'react';
import { observe } from '../api.ts';
import { CreateForm, Table, type Column } from '../components.tsx';
import { fmtPercent, plural } from '../format.ts';
import { Async, Badge, Field, Page, Section, Stat, Stats, useAsync } from '../ui.tsx';

const WEIGHT_LABELS: Record<string, string> = {
  errorRate: 'Error rate',
  costEfficiency: 'Cost efficiency',
  toolSuccess: 'Tool success',
  latency: 'Latency',
  completionRate: 'Completion rate',
};

const retention = (days: number) => (days === 0 ? 'kept forever' : plural(days, 'day'));
const yesNo = (on: boolean, yes: string, no: string) => <Badge tone={on ? 'good' : 'neutral'}>{on ? yes : no}</Badge>;

function RetentionForm({ current, onSaved }: { current: number; onSaved: () => void }) {
  const [days, setDays] = useState(String(current));
  const save = async () => {
    const config = await observe('PUT /api/config', { body: { retentionDays: Number(days) } });
    onSaved();
    return `Saved: sessions are ${config.retentionDays === 0 ? 'kept forever' : `deleted ${plural(config.retentionDays, 'day')} after their last event`}.`;
  };
  return (
    <CreateForm create={save} submit="Save retention" pending="Saving…" failure="Retention was not changed">
      <Field label="Keep sessions for (days)" htmlFor="retention-days" hint="A session is deleted whole once its last event is older; 0 keeps everything. Deletions are recorded in the audit log.">
        <input id="retention-days" type="number" min={0} max={36500} required value={days} onChange={(e) => setDays(e.target.value)} aria-describedby="retention-days-hint" />
      </Field>
    </CreateForm>
  );
}

type Weight = { name: string; weight: number };
const WEIGHT_COLUMNS: Column<Weight>[] = [
  { header: 'Part of the health score', rowHeader: true, cell: (w) => WEIGHT_LABELS[w.name] ?? w.name },
  { header: 'Weight', num: true, cell: (w) => fmtPercent(w.weight, 0) },
];

export function SettingsPage() {
  const config = useAsync((signal) => observe('GET /api/config', { signal }), []);
  const features = useAsync((signal) => observe('GET /api/config/features', { signal }), []);
  const weights = useAsync((signal) => observe('GET /api/config/health-weights', { signal }), []);
  return (
    <Page title="Retention and configuration" subtitle="How long observe keeps sessions, and how it is set up. Secrets are shown as set or not, never read back.">
      <Section title="Configuration">
        <Async state={config} label="Loading the configuration…">
          {(c) => (
            <Stats>
              <Stat label="Sessions kept" value={retention(c.retentionDays)} />
              <Stat label="API keys" value={c.authDisabled ? <Badge tone="bad">not required</Badge> : <Badge tone="good">required</Badge>} />
              <Stat label="Approval gate webhook secret" value={yesNo(c.approvalGateSecretSet, 'set', 'not set')} />
              <Stat label="Form service webhook secret" value={yesNo(c.formServiceSecretSet, 'set', 'not set')} />
              <Stat label="Agent memory" value={yesNo(c.memoryEnabled, 'on', 'off')} hint={features.data?.memoryUrl || undefined} />
            </Stats>
          )}
        </Async>
      </Section>
      <Section title="Retention">
        <Async state={config} label="Loading the configuration…">
          {(c) => <RetentionForm current={c.retentionDays} onSaved={config.reload} />}
        </Async>
      </Section>
      <Section title="Health score weights">
        <Async state={weights} label="Loading the weights…">
          {(w) => (
            <Table rows={Object.entries(w).map(([name, weight]) => ({ name, weight }))} columns={WEIGHT_COLUMNS} rowKey={(x) => x.name} testId="health-weights" />
          )}
        </Async>
      </Section>
    </Page>
  );
}
