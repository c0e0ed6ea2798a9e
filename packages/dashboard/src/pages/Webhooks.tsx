import type { GateSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { gate, type GateAnswer } from '../api.ts';
import { AsyncTable, Choices, CreateForm, ManagedTable, rowButton, type Column } from '../components.tsx';
import { fmtDateTime, timeAgo } from '../format.ts';
import { Badge, Field, Page, Section, StatusBadge, useAction, useAsync } from '../ui.tsx';

type Webhook = GateSchemas.Webhook;
type WebhookEvent = Webhook['events'][number];
type Delivery = GateAnswer<'GET /api/webhooks/{id}/deliveries'>['deliveries'][number];

const EVENTS: { value: WebhookEvent; label: string }[] = (['request.created', 'request.decided', 'request.expired', 'request.confirmed'] as const).map(
  (value) => ({ value, label: value }),
);

const DELIVERY_COLUMNS: Column<Delivery>[] = [
  { header: 'Event', cell: (d) => <code>{d.event}</code> },
  { header: 'Status', cell: (d) => <StatusBadge status={d.status} /> },
  { header: 'Attempts', num: true, cell: (d) => d.attempts },
  {
    header: 'Answer',
    className: 'clip',
    cell: (d) => `${d.responseStatus !== null ? `HTTP ${d.responseStatus}` : ''}${d.lastError ? ` ${d.lastError}` : d.responseStatus === null ? '—' : ''}`,
  },
  { header: 'Queued', title: (d) => fmtDateTime(d.createdAt), cell: (d) => timeAgo(d.createdAt) },
  {
    header: 'Delivered / next try',
    cell: (d) => (d.deliveredAt ? fmtDateTime(d.deliveredAt) : d.nextAttemptAt ? `next try ${fmtDateTime(d.nextAttemptAt)}` : '—'),
  },
];

function Deliveries({ webhook }: { webhook: Webhook }) {
  const deliveries = useAsync(
    (signal) => gate('GET /api/webhooks/{id}/deliveries', { params: { id: webhook.id }, query: { limit: 50 }, signal }),
    [webhook.id],
    {
      pollMs: 5000,
    },
  );
  return (
    <Section title={`Deliveries to ${webhook.url}`}>
      <AsyncTable state={deliveries} rows={(d) => d.deliveries} empty="Nothing was sent to this webhook yet." columns={DELIVERY_COLUMNS} rowKey={(d) => d.id} />
    </Section>
  );
}

const WEBHOOK_COLUMNS: Column<Webhook>[] = [
  { header: 'URL', className: 'clip', cell: (w) => w.url },
  { header: 'Events', cell: (w) => w.events.join(', ') },
  { header: 'Signed', cell: (w) => (w.hasSecret ? 'yes' : 'no') },
  { header: 'State', cell: (w) => (w.enabled ? <Badge tone="good">enabled</Badge> : <Badge>disabled</Badge>) },
];

export function WebhooksPage() {
  const webhooks = useAsync((signal) => gate('GET /api/webhooks', { signal }), []);
  const [selected, setSelected] = useState<string | null>(null);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEvent[]>(['request.created', 'request.decided']);
  const [secret, setSecret] = useState('');
  const create = async () => {
    const hook = await gate('POST /api/webhooks', { body: { url, events, ...(secret && { secret }) } });
    setUrl('');
    setSecret('');
    webhooks.reload();
    return `Webhook to ${hook.url} registered${hook.hasSecret ? ' with a signing secret' : ''}.`;
  };
  const toggle = useAction(async (hook: Webhook) => {
    await gate('PATCH /api/webhooks/{id}', { params: { id: hook.id }, body: { enabled: !hook.enabled } });
    webhooks.reload();
  });
  const remove = useAction(async (hook: Webhook) => {
    if (!window.confirm(`Delete the webhook to ${hook.url}? Its pending deliveries are dropped.`)) return;
    await gate('DELETE /api/webhooks/{id}', { params: { id: hook.id } });
    if (selected === hook.id) setSelected(null);
    webhooks.reload();
  });
  const chosen = webhooks.data?.webhooks.find((w) => w.id === selected);

  return (
    <Page
      title="Webhooks"
      subtitle="The gate posts request events to these URLs, signed with X-Gate-Signature when a secret is set, and retries failed deliveries."
    >
      <Section title="Webhooks">
        <ManagedTable
          state={webhooks}
          rows={(d) => d.webhooks}
          empty="No webhooks registered."
          columns={WEBHOOK_COLUMNS}
          rowKey={(w) => w.id}
          rowClassName={(w) => (w.id === selected ? 'highlight' : undefined)}
          subject={(w) => w.url}
          actions={[toggle, remove]}
          buttons={(w) => [
            { label: 'Deliveries', run: () => setSelected(w.id === selected ? null : w.id), pending: false, pressed: w.id === selected },
            rowButton(w.enabled ? 'Disable' : 'Enable', toggle, [w]),
            rowButton('Delete', remove, [w], { danger: true }),
          ]}
        />
      </Section>
      {chosen && <Deliveries webhook={chosen} />}
      <Section title="New webhook">
        <CreateForm create={create} submit="Register webhook" pending="Registering…" failure="The webhook was not registered">
          <div className="form-grid">
            <Field label="URL" htmlFor="hook-url">
              <input type="url" required value={url} placeholder="https://example.com/vigil-gate" onChange={(e) => setUrl(e.target.value)} />
            </Field>
            <Field label="Signing secret (16+ characters, optional)" htmlFor="hook-secret">
              <input type="password" autoComplete="off" minLength={16} value={secret} onChange={(e) => setSecret(e.target.value)} />
            </Field>
          </div>
          <Choices legend="Events" options={EVENTS} chosen={events} onChange={setEvents} />
        </CreateForm>
      </Section>
    </Page>
  );
}
