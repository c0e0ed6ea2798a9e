import { useState } from 'react';
import { observe, type ObserveAnswer } from '../api.ts';
import { CreateForm, Table, type Column } from '../components.tsx';
import { fmtPercent, plural } from '../format.ts';
import { Async, Badge, ErrorMessage, Field, Notice, Page, Section, Stat, Stats, useAsync, useFormAction } from '../ui.tsx';

type Config = ObserveAnswer<'GET /api/config'>;

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
      <Field
        label="Keep sessions for (days)"
        htmlFor="retention-days"
        hint="A session is deleted whole once its last event is older; 0 keeps everything. Deletions are recorded in the audit log."
      >
        <input type="number" min={0} max={36500} required value={days} onChange={(e) => setDays(e.target.value)} />
      </Field>
    </CreateForm>
  );
}

/** The webhook secrets observe checks signatures with; each is set here or falls back to its environment variable. */
const SECRETS = [
  { field: 'approvalGateWebhookSecret', isSet: 'approvalGateSecretSet', label: 'Approval gate webhook secret', env: 'APPROVAL_GATE_WEBHOOK_SECRET' },
  { field: 'formServiceWebhookSecret', isSet: 'formServiceSecretSet', label: 'Form service webhook secret', env: 'FORM_SERVICE_WEBHOOK_SECRET' },
] as const;

function SecretForm({ secret, config, onSaved }: { secret: (typeof SECRETS)[number]; config: Config; onSaved: () => void }) {
  const [value, setValue] = useState('');
  const save = useFormAction(async (next: string | null) => {
    await observe('PUT /api/config', { body: { [secret.field]: next } });
    setValue('');
    onSaved();
    return next === null ? `${secret.label} cleared: ${secret.env} applies, if set.` : `${secret.label} saved.`;
  });
  const id = `secret-${secret.field}`;
  return (
    <form
      className="filters"
      onSubmit={(e) => {
        e.preventDefault();
        save.start(value);
      }}
    >
      <Field label={`New ${secret.label.toLowerCase()}`} htmlFor={id}>
        <input type="password" autoComplete="new-password" minLength={16} maxLength={512} required value={value} onChange={(e) => setValue(e.target.value)} />
      </Field>
      <button type="submit" className="secondary" disabled={save.pending}>
        Save secret
      </button>
      {config[secret.isSet] && (
        <button type="button" className="danger" disabled={save.pending} onClick={() => save.start(null)}>
          Clear<span className="visually-hidden"> the {secret.label.toLowerCase()}</span>
        </button>
      )}
      {save.error && <ErrorMessage error={save.error} title="The secret was not changed" />}
      {save.done && <Notice>{save.done}</Notice>}
    </form>
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
    <Page
      title="Retention and configuration"
      subtitle="How long observe keeps sessions, and how it is set up. Secrets are shown as set or not, never read back."
    >
      <Async state={config} label="Loading the configuration…">
        {(c) => (
          <>
            <Section title="Configuration">
              <Stats>
                <Stat label="Sessions kept" value={retention(c.retentionDays)} />
                <Stat label="API keys" value={c.authDisabled ? <Badge tone="bad">not required</Badge> : <Badge tone="good">required</Badge>} />
                {SECRETS.map((secret) => (
                  <Stat key={secret.field} label={secret.label} value={yesNo(c[secret.isSet], 'set', 'not set')} />
                ))}
                <Stat label="Agent memory" value={yesNo(c.memoryEnabled, 'on', 'off')} hint={features.data?.memoryUrl || undefined} />
              </Stats>
            </Section>
            <Section title="Retention">
              <RetentionForm current={c.retentionDays} onSaved={config.reload} />
            </Section>
            <Section title="Webhook secrets">
              <p className="muted small">Observe checks the signature of webhooks from these services with them. They are never shown again once saved.</p>
              <div className="stack">
                {SECRETS.map((secret) => (
                  <SecretForm key={secret.field} secret={secret} config={c} onSaved={config.reload} />
                ))}
              </div>
            </Section>
          </>
        )}
      </Async>
      <Section title="Health score weights">
        <Async state={weights} label="Loading the weights…">
          {(w) => (
            <Table
              rows={Object.entries(w).map(([name, weight]) => ({ name, weight }))}
              columns={WEIGHT_COLUMNS}
              rowKey={(x) => x.name}
              testId="health-weights"
            />
          )}
        </Async>
      </Section>
    </Page>
  );
}
