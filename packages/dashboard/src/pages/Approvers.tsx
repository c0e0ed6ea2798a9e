import type { GateSchemas } from '@vigil/sdk/types';
import { useState } from 'react';
import { gate } from '../api.ts';
import { CreateForm, ManagedTable, rowButton, type Column } from '../components.tsx';
import { fmtDateTime } from '../format.ts';
import { Badge, Field, Page, Section, useAction, useAsync } from '../ui.tsx';

type Group = GateSchemas.ApproverGroup;
type Delegation = GateSchemas.Delegation;

const GROUP_COLUMNS: Column<Group>[] = [
  { header: 'Group', cell: (g) => <code>group:{g.name}</code> },
  { header: 'Members', className: 'clip', cell: (g) => (g.members.length === 0 ? '—' : g.members.join(', ')) },
  { header: 'Description', className: 'clip', cell: (g) => g.description ?? '—' },
  { header: 'Changed', cell: (g) => fmtDateTime(g.updatedAt) },
];

const DELEGATION_COLUMNS: Column<Delegation>[] = [
  { header: 'Decider', cell: (d) => <code>{d.delegator}</code> },
  { header: 'Delegate', cell: (d) => <code>{d.delegate}</code> },
  { header: 'From', cell: (d) => fmtDateTime(d.startsAt) },
  { header: 'Until', cell: (d) => fmtDateTime(d.endsAt) },
  {
    header: 'State',
    cell: (d) => (d.active ? <Badge tone="good">active</Badge> : d.revokedAt ? <Badge tone="bad">revoked</Badge> : <Badge>inactive</Badge>),
  },
  { header: 'Reason', className: 'clip', cell: (d) => d.reason ?? '—' },
];

/** Decider names typed one per line or separated by commas. */
const deciderList = (text: string): string[] =>
  text
    .split(/[\n,]/)
    .map((name) => name.trim())
    .filter(Boolean);

/** Approver groups and delegations (docs/guide/approvers.md): who may decide, and who holds whose authority now. */
export function ApproversPage() {
  const groups = useAsync((signal) => gate('GET /api/approver-groups', { signal }), [], { pollMs: 5000 });
  const delegations = useAsync((signal) => gate('GET /api/delegations', { signal }), [], { pollMs: 5000 });

  const [groupName, setGroupName] = useState('');
  const [members, setMembers] = useState('');
  const [description, setDescription] = useState('');
  const createGroup = async () => {
    const group = await gate('POST /api/approver-groups', { body: { name: groupName, members: deciderList(members), description: description || null } });
    setGroupName('');
    setMembers('');
    setDescription('');
    groups.reload();
    return `Created group:${group.name}.`;
  };
  const deleteGroup = useAction(async (group: Group) => {
    if (!window.confirm(`Delete group:${group.name}? Rules that name it then admit no one through it.`)) return;
    await gate('DELETE /api/approver-groups/{id}', { params: { id: group.id } });
    groups.reload();
  });

  const [delegator, setDelegator] = useState('');
  const [delegate, setDelegate] = useState('');
  const [until, setUntil] = useState('');
  const [reason, setReason] = useState('');
  const createDelegation = async () => {
    const made = await gate('POST /api/delegations', {
      body: { delegator, delegate, endsAt: new Date(until).toISOString(), reason: reason || null },
    });
    setDelegate('');
    setReason('');
    delegations.reload();
    return `${made.delegate} decides for ${made.delegator} until ${fmtDateTime(made.endsAt)}.`;
  };
  const revokeDelegation = useAction(async (delegation: Delegation) => {
    await gate('DELETE /api/delegations/{id}', { params: { id: delegation.id } });
    delegations.reload();
  });

  return (
    <Page
      title="Approvers"
      subtitle="Groups a policy rule names as group:<name>, and deciders' authority lent for a time window. Every change is recorded in the change log."
    >
      <Section title="Approver groups">
        <ManagedTable
          state={groups}
          rows={(d) => d.groups}
          empty="No approver groups yet."
          columns={GROUP_COLUMNS}
          rowKey={(g) => g.id}
          testId="approver-groups"
          subject={(g) => `group:${g.name}`}
          actions={[deleteGroup]}
          buttons={(g) => [rowButton('Delete', deleteGroup, [g], { danger: true })]}
        />
      </Section>
      <Section title="New approver group">
        <CreateForm create={createGroup} submit="Create group" pending="Creating…" failure="The group was not created" label="New approver group">
          <div className="form-grid">
            <Field label="Name (rules name it as group:<name>)" htmlFor="group-name">
              <input required value={groupName} pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*" onChange={(e) => setGroupName(e.target.value)} />
            </Field>
            <Field label="Members (slack:U1, api:<key name>, dashboard:<user>; commas or lines)" htmlFor="group-members">
              <textarea value={members} rows={2} onChange={(e) => setMembers(e.target.value)} />
            </Field>
            <Field label="Description" htmlFor="group-description">
              <input value={description} onChange={(e) => setDescription(e.target.value)} />
            </Field>
          </div>
        </CreateForm>
      </Section>
      <Section title="Delegations">
        <ManagedTable
          state={delegations}
          rows={(d) => d.delegations}
          empty="No delegations."
          columns={DELEGATION_COLUMNS}
          rowKey={(d) => d.id}
          testId="delegations"
          subject={(d) => `the delegation of ${d.delegator} to ${d.delegate}`}
          actions={[revokeDelegation]}
          buttons={(d) => (d.revokedAt === null ? [rowButton('Revoke', revokeDelegation, [d], { danger: true })] : [])}
        />
      </Section>
      <Section title="New delegation">
        <CreateForm create={createDelegation} submit="Delegate" pending="Delegating…" failure="The delegation was not made" label="New delegation">
          <div className="form-grid">
            <Field label="Decider (out of office)" htmlFor="delegation-delegator">
              <input required value={delegator} placeholder="slack:U1" onChange={(e) => setDelegator(e.target.value)} />
            </Field>
            <Field label="Delegate (decides meanwhile)" htmlFor="delegation-delegate">
              <input required value={delegate} placeholder="slack:U2" onChange={(e) => setDelegate(e.target.value)} />
            </Field>
            <Field label="Until" htmlFor="delegation-until">
              <input required type="datetime-local" value={until} onChange={(e) => setUntil(e.target.value)} />
            </Field>
            <Field label="Reason" htmlFor="delegation-reason">
              <input value={reason} onChange={(e) => setReason(e.target.value)} />
            </Field>
          </div>
        </CreateForm>
      </Section>
    </Page>
  );
}
