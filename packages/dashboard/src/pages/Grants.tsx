import type { GateSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { gate } from '../api.ts';
import { CreateForm, ManagedTable, rowButton, type Column } from '../components.tsx';
import { fmtDateTime, timeAgo } from '../format.ts';
import { Badge, Field, Page, Section, useAction, useAsync, type Tone } from '../ui.tsx';

type Grant = GateSchemas.Grant;

const STATUS_TONES: Record<Grant['status'], Tone> = { active: 'good', expired: 'neutral', used_up: 'neutral', revoked: 'bad' };

const GRANT_COLUMNS: Column<Grant>[] = [
  { header: 'Action', cell: (g) => <code>{g.action}</code> },
  {
    header: 'For',
    cell: (g) => [g.agentId !== null && `agent ${g.agentId}`, g.sessionId !== null && `session ${g.sessionId}`].filter(Boolean).join(', '),
  },
  { header: 'Uses', num: true, cell: (g) => (g.maxUses === null ? `${g.uses}` : `${g.uses} of ${g.maxUses}`) },
  { header: 'Until', cell: (g) => (g.expiresAt === null ? 'no time limit' : fmtDateTime(g.expiresAt)) },
  { header: 'Status', cell: (g) => <Badge tone={STATUS_TONES[g.status]}>{g.status.replace('_', ' ')}</Badge> },
  { header: 'Granted by', cell: (g) => g.createdBy },
  { header: 'Created', title: (g) => fmtDateTime(g.createdAt), cell: (g) => timeAgo(g.createdAt) },
  { header: 'Note', className: 'clip', cell: (g) => g.note ?? '' },
];

const DURATIONS: { value: string; label: string }[] = [
  { value: '', label: 'No time limit (uses only)' },
  { value: '900', label: '15 minutes' },
  { value: '1800', label: '30 minutes' },
  { value: '3600', label: '1 hour' },
  { value: '14400', label: '4 hours' },
  { value: '86400', label: '1 day' },
];

/**
 * Time-limited grants (docs/guide/grants.md): a decider lets an agent or session run one action for
 * a while and/or a number of uses; requests they cover are approved by the grant.
 */
export function GrantsPage() {
  const [onlyActive, setOnlyActive] = useState(true);
  const grants = useAsync((signal) => gate('GET /api/grants', { query: { active: onlyActive ? 'true' : 'false', limit: 200 }, signal }), [onlyActive], {
    pollMs: 5000,
  });
  const [action, setAction] = useState('');
  const [agentId, setAgentId] = useState('');
  const [sessionId, setSessionId] = useState('');
  const [duration, setDuration] = useState('1800');
  const [maxUses, setMaxUses] = useState('');
  const [note, setNote] = useState('');
  const create = async () => {
    const grant = await gate('POST /api/grants', {
      body: {
        action,
        ...(agentId && { agentId }),
        ...(sessionId && { sessionId }),
        ...(duration && { durationSeconds: Number(duration) }),
        ...(maxUses && { maxUses: Number(maxUses) }),
        ...(note && { note }),
      },
    });
    setAction('');
    setMaxUses('');
    setNote('');
    grants.reload();
    return `Granted ${grant.action} (grant ${grant.id}).`;
  };
  const revoke = useAction(async (grant: Grant) => {
    if (!window.confirm(`Revoke the grant of ${grant.action}? Requests it covers go back to their policy's route.`)) return;
    await gate('POST /api/grants/{id}/revoke', { params: { id: grant.id } });
    grants.reload();
  });

  return (
    <Page
      title="Grants"
      subtitle="Standing approvals: an action for an agent or session, for a while and/or a number of uses. Requests a policy routes to a person that a grant covers are approved by it, and the audit trail names the grant."
    >
      <Section title="Grants">
        <label className="row">
          <input type="checkbox" checked={onlyActive} onChange={(e) => setOnlyActive(e.target.checked)} /> Only grants still in force
        </label>
        <div data-testid="grants">
          <ManagedTable
            state={grants}
            rows={(d) => d.grants}
            empty={onlyActive ? 'No grant is in force.' : 'No grant was made yet.'}
            columns={GRANT_COLUMNS}
            rowKey={(g) => g.id}
            subject={(g) => `${g.action} grant ${g.id}`}
            actions={[revoke]}
            buttons={(g) => (g.status === 'active' ? [rowButton('Revoke', revoke, [g], { danger: true })] : [])}
          />
        </div>
      </Section>
      <Section title="New grant">
        <CreateForm create={create} submit="Grant" pending="Granting…" failure="The grant was not made">
          <div className="form-grid">
            <Field label="Action" htmlFor="grant-action">
              <input required value={action} placeholder="deploy" onChange={(e) => setAction(e.target.value)} />
            </Field>
            <Field label="Agent (context.agentId)" htmlFor="grant-agent">
              <input value={agentId} onChange={(e) => setAgentId(e.target.value)} />
            </Field>
            <Field label="Session (context.sessionId)" htmlFor="grant-session">
              <input value={sessionId} onChange={(e) => setSessionId(e.target.value)} />
            </Field>
            <Field label="For how long" htmlFor="grant-duration">
              <select value={duration} onChange={(e) => setDuration(e.target.value)}>
                {DURATIONS.map((d) => (
                  <option key={d.value} value={d.value}>
                    {d.label}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="At most this many uses (optional)" htmlFor="grant-uses">
              <input type="number" min={1} value={maxUses} onChange={(e) => setMaxUses(e.target.value)} />
            </Field>
            <Field label="Note (optional)" htmlFor="grant-note">
              <input value={note} onChange={(e) => setNote(e.target.value)} />
            </Field>
          </div>
        </CreateForm>
      </Section>
    </Page>
  );
}
