import { useState, type FormEvent } from 'react';
import { credentials, gate, observe } from '../api.ts';
import { Async, Badge, ErrorMessage, Field, fmtDateTime, Page, RowAction, SecretOnce, Section, timeAgo, useAction, useAsync } from '../ui.tsx';

interface GateKey {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  rateLimit: number | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

interface ObserveKey {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const OBSERVE_SCOPES = [
  { value: 'ingest', label: 'ingest — send events, read its agent’s state (for agents)' },
  { value: 'read', label: 'read — every query (sessions, events, analytics, …)' },
  { value: 'admin', label: 'admin — everything, also rules, configuration and keys' },
];

const SCOPES = [
  { value: 'admin', label: 'admin — everything' },
  { value: 'request:create', label: 'request:create — ask for approval, confirm execution' },
  { value: 'request:read', label: 'request:read — read requests and audit trails' },
  { value: 'request:decide', label: 'request:decide — approve and deny' },
  { value: 'webhook:manage', label: 'webhook:manage — webhooks and deliveries' },
];

interface ScopeChoicesProps {
  legend: string;
  options: { value: string; label: string }[];
  chosen: string[];
  onChange: (next: string[]) => void;
}

/** One checkbox per scope of a new key. */
function ScopeChoices({ legend, options, chosen, onChange }: ScopeChoicesProps) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map((s) => (
        <label key={s.value} className="checkbox">
          <input
            type="checkbox"
            checked={chosen.includes(s.value)}
            onChange={(e) => onChange(e.target.checked ? [...chosen, s.value] : chosen.filter((x) => x !== s.value))}
          />{' '}
          {s.label}
        </label>
      ))}
    </fieldset>
  );
}

function GateKeys() {
  const keys = useAsync((signal) => gate<{ keys: GateKey[] }>('/api-keys', { signal }), []);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['request:read', 'request:decide']);
  const [rateLimit, setRateLimit] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const create = useAction(async () => {
    if (scopes.length === 0) throw new Error('Choose at least one scope.');
    const key = await gate<{ key: string }>('/api-keys', { method: 'POST', body: { name, scopes, ...(rateLimit.trim() && { rateLimit: Number(rateLimit) }) } });
    setCreated(key.key);
    setName('');
    keys.reload();
  });
  const revoke = useAction(async (key: GateKey) => {
    if (!window.confirm(`Revoke the gate key “${key.name}”? It and its dashboard sessions stop working at once.`)) return;
    await gate(`/api-keys/${key.id}`, { method: 'DELETE' });
    keys.reload();
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setCreated(null);
    void create.run();
  };
  const mine = credentials().gate?.keyName;
  return (
    <Section title="Gate keys">
      {revoke.error && <ErrorMessage error={revoke.error} />}
      <Async state={keys} label="Loading gate keys…" isEmpty={(d) => d.keys.length === 0} empty="No gate keys.">
        {(data) => (
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key starts with</th>
                <th scope="col">Scopes</th>
                <th scope="col">Rate limit</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.keys.map((k) => (
                <tr key={k.id}>
                  <td>
                    {k.name} {k.name === mine && <Badge tone="info">you</Badge>}
                  </td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{k.scopes.join(', ')}</td>
                  <td>{k.rateLimit === null ? 'unlimited' : `${k.rateLimit}/min`}</td>
                  <td title={fmtDateTime(k.lastUsedAt)}>{k.lastUsedAt ? timeAgo(k.lastUsedAt) : 'never'}</td>
                  <td>{k.revokedAt ? <Badge tone="bad">revoked</Badge> : <Badge tone="good">active</Badge>}</td>
                  <td>
                    {!k.revokedAt && (
                      <RowAction tone="danger" label="Revoke" subject={k.name} onClick={() => void revoke.run(k)} disabled={revoke.pending} />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Async>
      <h3>New gate key</h3>
      <form onSubmit={submit} className="stack">
        <div className="form-grid">
          <Field label="Name" htmlFor="gate-key-name" hint="Decisions taken with the key directly are recorded as api:<name>.">
            <input id="gate-key-name" required value={name} maxLength={200} onChange={(e) => setName(e.target.value)} aria-describedby="gate-key-name-hint" />
          </Field>
          <Field label="Rate limit per minute (empty: unlimited)" htmlFor="gate-key-rate">
            <input id="gate-key-rate" type="number" min={1} value={rateLimit} onChange={(e) => setRateLimit(e.target.value)} />
          </Field>
        </div>
        <ScopeChoices legend="Scopes" options={SCOPES} chosen={scopes} onChange={setScopes} />
        <div>
          <button type="submit" disabled={create.pending}>
            {create.pending ? 'Creating…' : 'Create gate key'}
          </button>
        </div>
        {create.error && <ErrorMessage error={create.error} title="The key was not created" />}
        {created && <SecretOnce label="New gate key." value={created} onDone={() => setCreated(null)} />}
      </form>
    </Section>
  );
}

function ObserveKeys() {
  const keys = useAsync((signal) => observe<{ keys: ObserveKey[] }>('/keys', { signal }), []);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['ingest']);
  const [created, setCreated] = useState<string | null>(null);
  const create = useAction(async () => {
    if (scopes.length === 0) throw new Error('Choose at least one scope.');
    const key = await observe<{ key: string }>('/keys', { method: 'POST', body: { name, scopes } });
    setCreated(key.key);
    setName('');
    keys.reload();
  });
  const revoke = useAction(async (key: ObserveKey) => {
    if (!window.confirm(`Revoke the observe key “${key.name}”? Agents using it can no longer send events.`)) return;
    await observe(`/keys/${key.id}`, { method: 'DELETE' });
    keys.reload();
  });
  return (
    <Section title="Observe keys">
      {revoke.error && <ErrorMessage error={revoke.error} />}
      <Async state={keys} label="Loading observe keys…" isEmpty={(d) => d.keys.length === 0} empty="No observe keys.">
        {(data) => (
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key starts with</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.keys.map((k) => (
                <tr key={k.id}>
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{k.scopes.join(', ')}</td>
                  <td>{fmtDateTime(k.createdAt)}</td>
                  <td>{k.lastUsedAt ? timeAgo(k.lastUsedAt) : 'never'}</td>
                  <td>{k.revokedAt ? <Badge tone="bad">revoked</Badge> : <Badge tone="good">active</Badge>}</td>
                  <td>
                    {!k.revokedAt && (
                      <RowAction tone="danger" label="Revoke" subject={k.name} onClick={() => void revoke.run(k)} disabled={revoke.pending} />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Async>
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          setCreated(null);
          void create.run();
        }}
      >
        <div className="field">
          <label htmlFor="observe-key-name">New observe key name</label>
          <input id="observe-key-name" required value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
        </div>
        <ScopeChoices legend="Scopes (a key grants only scopes it has itself)" options={OBSERVE_SCOPES} chosen={scopes} onChange={setScopes} />
        <div>
          <button type="submit" disabled={create.pending}>
            Create observe key
          </button>
        </div>
      </form>
      {create.error && <ErrorMessage error={create.error} title="The key was not created" />}
      {created && <SecretOnce label="New observe key." value={created} onDone={() => setCreated(null)} />}
    </Section>
  );
}

export function KeysPage() {
  return (
    <Page title="API keys" subtitle="Keys are shown once at creation; the services store only their SHA-256.">
      <GateKeys />
      {credentials().observeKey ? <ObserveKeys /> : <p className="muted">Sign in with an observe key to manage observe keys here too.</p>}
    </Page>
  );
}
