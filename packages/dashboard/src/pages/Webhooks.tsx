import { useState, type FormEvent } from 'react';
import { gate } from '../api.ts';
import { Async, Badge, ErrorMessage, Field, fmtDateTime, Notice, Page, Section, StatusBadge, timeAgo, useAction, useAsync } from '../ui.tsx';

interface Webhook {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  hasSecret: boolean;
  createdAt: string;
}

interface Delivery {
  id: string;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  responseStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

const EVENTS = ['request.created', 'request.decided', 'request.expired', 'request.confirmed'];

function Deliveries({ webhook }: { webhook: Webhook }) {
  const deliveries = useAsync((signal) => gate<{ deliveries: Delivery[]; total: number }>(`/webhooks/${webhook.id}/deliveries`, { query: { limit: 50 }, signal }), [webhook.id], {
    pollMs: 5000,
  });
  return (
    <Section title={`Deliveries to ${webhook.url}`}>
      <Async state={deliveries} isEmpty={(d) => d.deliveries.length === 0} empty="Nothing was sent to this webhook yet.">
        {(data) => (
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col" className="num">Attempts</th>
                <th scope="col">Answer</th>
                <th scope="col">Queued</th>
                <th scope="col">Delivered / next try</th>
              </tr>
            </thead>
            <tbody>
              {data.deliveries.map((d) => (
                <tr key={d.id}>
                  <td>
                    <code>{d.event}</code>
                  </td>
                  <td>
                    <StatusBadge status={d.status} />
                  </td>
                  <td className="num">{d.attempts}</td>
                  <td className="clip">{d.responseStatus !== null ? `HTTP ${d.responseStatus}` : ''}{d.lastError ? ` ${d.lastError}` : d.responseStatus === null ? '—' : ''}</td>
                  <td title={fmtDateTime(d.createdAt)}>{timeAgo(d.createdAt)}</td>
                  <td>{d.deliveredAt ? fmtDateTime(d.deliveredAt) : d.nextAttemptAt ? `next try ${fmtDateTime(d.nextAttemptAt)}` : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Async>
    </Section>
  );
}

export function WebhooksPage() {
  const webhooks = useAsync((signal) => gate<{ webhooks: Webhook[] }>('/webhooks', { signal }), []);
  const [selected, setSelected] = useState<string | null>(null);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['request.created', 'request.decided']);
  const [secret, setSecret] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const create = useAction(async () => {
    const hook = await gate<Webhook>('/webhooks', { method: 'POST', body: { url, events, ...(secret && { secret }) } });
    setDone(`Webhook to ${hook.url} registered${hook.hasSecret ? ' with a signing secret' : ''}.`);
    setUrl('');
    setSecret('');
    webhooks.reload();
  });
  const toggle = useAction(async (hook: Webhook) => {
    await gate(`/webhooks/${hook.id}`, { method: 'PATCH', body: { enabled: !hook.enabled } });
    webhooks.reload();
  });
  const remove = useAction(async (hook: Webhook) => {
    if (!window.confirm(`Delete the webhook to ${hook.url}? Its pending deliveries are dropped.`)) return;
    await gate(`/webhooks/${hook.id}`, { method: 'DELETE' });
    if (selected === hook.id) setSelected(null);
    webhooks.reload();
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setDone(null);
    void create.run();
  };
  const chosen = webhooks.data?.webhooks.find((w) => w.id === selected);

  return (
    <Page title="Webhooks" subtitle="The gate posts request events to these URLs, signed with X-Gate-Signature when a secret is set, and retries failed deliveries.">
      <Section title="Webhooks">
        {(toggle.error ?? remove.error) && <ErrorMessage error={(toggle.error ?? remove.error)!} />}
        <Async state={webhooks} isEmpty={(d) => d.webhooks.length === 0} empty="No webhooks registered.">
          {(data) => (
            <table>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">Signed</th>
                  <th scope="col">State</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.webhooks.map((w) => (
                  <tr key={w.id} className={w.id === selected ? 'highlight' : undefined}>
                    <td className="clip">{w.url}</td>
                    <td>{w.events.join(', ')}</td>
                    <td>{w.hasSecret ? 'yes' : 'no'}</td>
                    <td>{w.enabled ? <Badge tone="good">enabled</Badge> : <Badge>disabled</Badge>}</td>
                    <td className="actions">
                      <button type="button" className="secondary small" onClick={() => setSelected(w.id === selected ? null : w.id)} aria-pressed={w.id === selected}>
                        Deliveries<span className="visually-hidden"> of {w.url}</span>
                      </button>
                      <button type="button" className="secondary small" onClick={() => void toggle.run(w)} disabled={toggle.pending}>
                        {w.enabled ? 'Disable' : 'Enable'}
                      </button>
                      <button type="button" className="danger small" onClick={() => void remove.run(w)} disabled={remove.pending}>
                        Delete
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Async>
      </Section>
      {chosen && <Deliveries webhook={chosen} />}
      <Section title="New webhook">
        <form onSubmit={submit} className="stack">
          <div className="form-grid">
            <Field label="URL" htmlFor="hook-url">
              <input id="hook-url" type="url" required value={url} placeholder="https://example.com/vigil-gate" onChange={(e) => setUrl(e.target.value)} />
            </Field>
            <Field label="Signing secret (16+ characters, optional)" htmlFor="hook-secret">
              <input id="hook-secret" type="password" autoComplete="off" minLength={16} value={secret} onChange={(e) => setSecret(e.target.value)} />
            </Field>
          </div>
          <fieldset>
            <legend>Events</legend>
            {EVENTS.map((e) => (
              <label key={e} className="checkbox">
                <input type="checkbox" checked={events.includes(e)} onChange={(x) => setEvents((list) => (x.target.checked ? [...list, e] : list.filter((v) => v !== e)))} /> {e}
              </label>
            ))}
          </fieldset>
          <div>
            <button type="submit" disabled={create.pending}>
              {create.pending ? 'Registering…' : 'Register webhook'}
            </button>
          </div>
          {create.error && <ErrorMessage error={create.error} title="The webhook was not registered" />}
          {done && <Notice>{done}</Notice>}
        </form>
      </Section>
    </Page>
  );
}
