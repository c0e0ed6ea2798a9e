import type { GateSchemas, ObserveSchemas } from '@vigil/sdk/types';
import { useState, type ReactNode } from 'react';
import { credentials, gate, observe } from '../api.ts';
import { Choices, CreateForm, ManagedTable, rowButton, type Column } from '../components.tsx';
import { fmtDateTime, timeAgo } from '../format.ts';
import { Badge, Field, Page, SecretOnce, Section, useAction, useAsync, type AsyncState } from '../ui.tsx';

type GateKey = GateSchemas.GateApiKey;
type ObserveKey = ObserveSchemas.ApiKey;

const OBSERVE_SCOPES: { value: ObserveKey['scopes'][number]; label: string }[] = [
  { value: 'ingest', label: 'ingest — send events, read its agent’s state (for agents)' },
  { value: 'read', label: 'read — every query (sessions, events, analytics, …)' },
  { value: 'admin', label: 'admin — everything, also rules, configuration and keys' },
];

const SCOPES: { value: GateKey['scopes'][number]; label: string }[] = [
  { value: 'admin', label: 'admin — everything' },
  { value: 'request:create', label: 'request:create — ask for approval, confirm execution' },
  { value: 'request:read', label: 'request:read — read requests and audit trails' },
  { value: 'request:decide', label: 'request:decide — approve and deny' },
  { value: 'webhook:manage', label: 'webhook:manage — webhooks and deliveries' },
];

/** The columns both key tables share around their own ones. */
function keyColumns<K extends GateKey | ObserveKey>(middle: Column<K>[], name: (k: K) => ReactNode = (k) => k.name): Column<K>[] {
  return [
    { header: 'Name', cell: name },
    { header: 'Key starts with', cell: (k) => <code>{k.prefix}…</code> },
    { header: 'Scopes', cell: (k) => k.scopes.join(', ') },
    ...middle,
    { header: 'State', cell: (k) => (k.revokedAt ? <Badge tone="bad">revoked</Badge> : <Badge tone="good">active</Badge>) },
  ];
}

/** A service's keys, each revocable until it is revoked. */
function KeyTable<K extends GateKey | ObserveKey>({
  state,
  label,
  empty,
  columns,
  revoke,
}: {
  state: AsyncState<{ keys: K[] }>;
  label: string;
  empty: string;
  columns: Column<K>[];
  revoke: { run: (key: K) => Promise<unknown>; pending: boolean; error: Error | undefined };
}) {
  return (
    <ManagedTable
      state={state}
      label={label}
      rows={(d) => d.keys}
      empty={empty}
      columns={columns}
      rowKey={(k) => k.id}
      subject={(k) => k.name}
      actions={[revoke]}
      buttons={(k) => (k.revokedAt ? [] : [rowButton('Revoke', revoke, [k], { danger: true })])}
    />
  );
}

/** Shows a created key once, with a button to copy it. */
const showKey = (label: string) => (value: string, clear: () => void) => <SecretOnce label={label} value={value} onDone={clear} />;

function GateKeys() {
  const keys = useAsync((signal) => gate('GET /api/api-keys', { signal }), []);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<GateKey['scopes']>(['request:read', 'request:decide']);
  const [rateLimit, setRateLimit] = useState('');
  const create = async () => {
    if (scopes.length === 0) throw new Error('Choose at least one scope.');
    const key = await gate('POST /api/api-keys', { body: { name, scopes, ...(rateLimit.trim() && { rateLimit: Number(rateLimit) }) } });
    setName('');
    keys.reload();
    return key.key;
  };
  const revoke = useAction(async (key: GateKey) => {
    if (!window.confirm(`Revoke the gate key “${key.name}”? It and its dashboard sessions stop working at once.`)) return;
    await gate('DELETE /api/api-keys/{id}', { params: { id: key.id } });
    keys.reload();
  });
  const mine = credentials().gate?.keyName;
  const columns = keyColumns<GateKey>(
    [
      { header: 'Rate limit', cell: (k) => (k.rateLimit === null ? 'unlimited' : `${k.rateLimit}/min`) },
      { header: 'Last used', title: (k) => fmtDateTime(k.lastUsedAt), cell: (k) => (k.lastUsedAt ? timeAgo(k.lastUsedAt) : 'never') },
    ],
    (k) => (
      <>
        {k.name} {k.name === mine && <Badge tone="info">you</Badge>}
      </>
    ),
  );
  return (
    <Section title="Gate keys">
      <KeyTable state={keys} label="Loading gate keys…" empty="No gate keys." columns={columns} revoke={revoke} />
      <h3>New gate key</h3>
      <CreateForm create={create} submit="Create gate key" pending="Creating…" failure="The key was not created" result={showKey('New gate key.')}>
        <div className="form-grid">
          <Field label="Name" htmlFor="gate-key-name" hint="Decisions taken with the key directly are recorded as api:<name>.">
            <input required value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
          </Field>
          <Field label="Rate limit per minute (empty: unlimited)" htmlFor="gate-key-rate">
            <input type="number" min={1} value={rateLimit} onChange={(e) => setRateLimit(e.target.value)} />
          </Field>
        </div>
        <Choices legend="Scopes" options={SCOPES} chosen={scopes} onChange={setScopes} />
      </CreateForm>
    </Section>
  );
}

function ObserveKeys() {
  const keys = useAsync((signal) => observe('GET /api/keys', { signal }), []);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<ObserveKey['scopes']>(['ingest']);
  const create = async () => {
    if (scopes.length === 0) throw new Error('Choose at least one scope.');
    const key = await observe('POST /api/keys', { body: { name, scopes } });
    setName('');
    keys.reload();
    return key.key;
  };
  const revoke = useAction(async (key: ObserveKey) => {
    if (!window.confirm(`Revoke the observe key “${key.name}”? Agents using it can no longer send events.`)) return;
    await observe('DELETE /api/keys/{id}', { params: { id: key.id } });
    keys.reload();
  });
  const columns = keyColumns<ObserveKey>([
    { header: 'Created', cell: (k) => fmtDateTime(k.createdAt) },
    { header: 'Last used', cell: (k) => (k.lastUsedAt ? timeAgo(k.lastUsedAt) : 'never') },
  ]);
  return (
    <Section title="Observe keys">
      <KeyTable state={keys} label="Loading observe keys…" empty="No observe keys." columns={columns} revoke={revoke} />
      <CreateForm create={create} submit="Create observe key" failure="The key was not created" result={showKey('New observe key.')}>
        <div className="field">
          <label htmlFor="observe-key-name">New observe key name</label>
          <input id="observe-key-name" required value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
        </div>
        <Choices legend="Scopes (a key grants only scopes it has itself)" options={OBSERVE_SCOPES} chosen={scopes} onChange={setScopes} />
      </CreateForm>
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
