import type { GateSchemas } from '@vigil/sdk/types';
import { gate } from '../api.ts';
import { AsyncTable, type Column } from '../components.tsx';
import { fmtDateTime } from '../format.ts';
import { Badge, Page, Section, useAsync } from '../ui.tsx';

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

/** Approver groups and delegations (docs/guide/approvers.md): who may decide, and who holds whose authority now. */
export function ApproversPage() {
  const groups = useAsync((signal) => gate('GET /api/approver-groups', { signal }), [], { pollMs: 5000 });
  const delegations = useAsync((signal) => gate('GET /api/delegations', { signal }), [], { pollMs: 5000 });
  return (
    <Page
      title="Approvers"
      subtitle="Groups a policy rule names as group:<name>, and deciders' authority lent for a time window. Changed through the API, recorded in the change log."
    >
      <Section title="Approver groups">
        <AsyncTable
          state={groups}
          rows={(d) => d.groups}
          empty="No approver groups yet."
          columns={GROUP_COLUMNS}
          rowKey={(g) => g.id}
          testId="approver-groups"
        />
      </Section>
      <Section title="Delegations">
        <AsyncTable
          state={delegations}
          rows={(d) => d.delegations}
          empty="No delegations."
          columns={DELEGATION_COLUMNS}
          rowKey={(d) => d.id}
          testId="delegations"
        />
      </Section>
    </Page>
  );
}
