import { useState } from 'react';
import { adminChanges, credentials, type AdminChange, type AdminChangeQuery, type AdminResource, type AdminResources, type Service } from '../api.ts';
import { AsyncTable, CursorPager, Filters, Table, type Column } from '../components.tsx';
import { fmtDateTime, plural, timeAgo } from '../format.ts';
import { setQuery, useLocation } from '../router.tsx';
import { Badge, ErrorMessage, Page, Section, useAsync } from '../ui.tsx';
import { AuditActor } from './Audit.tsx';

const PAGE_SIZE = 50;
const SERVICES: Record<Service, string> = { observe: 'Observe', gate: 'Gate' };
type AdminAction = NonNullable<AdminChangeQuery['action']>;
/** Every action the change log records, in the order a resource lives through them. */
const ACTIONS: readonly AdminAction[] = ['created', 'updated', 'enabled', 'disabled', 'revoked', 'breached', 'deleted'];

/** Each service's resources (from its OpenAPI document, so a new one fails the build until it has a label). */
const SERVICE_RESOURCES: { [S in Service]: Record<AdminResources[S], string> } = {
  observe: {
    api_key: 'API key',
    alert_rule: 'Alert rule',
    guardrail: 'Guardrail',
    settings: 'Settings',
    redaction_rule: 'Redaction rule',
    legal_hold: 'Legal hold',
  },
  gate: {
    policy: 'Policy',
    api_key: 'API key',
    webhook: 'Webhook',
    approver_group: 'Approver group',
    delegation: 'Delegation',
    grant: 'Grant',
    budget: 'Budget',
  },
};
const RESOURCES: Record<AdminResource, string> = { ...SERVICE_RESOURCES.gate, ...SERVICE_RESOURCES.observe };
/**
 * Whether to ask a service with this resource filter: not for another service's resource (it would
 * answer 400); a value no service knows (from the address) is theirs to refuse, shown as the error.
 */
const asksService = (service: Service, resource: AdminResource | ''): boolean =>
  resource === '' || !Object.hasOwn(RESOURCES, resource) || Object.hasOwn(SERVICE_RESOURCES[service], resource);

type Change = AdminChange & { service: Service };
/** Where each service's next page starts: absent for its newest page, null once it has no older entries. */
type Cursors = Partial<Record<Service, string | null>>;

function shown(value: unknown): string {
  if (value === undefined) return '—';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The fields a change touched, each with its value before and after (all fields of a creation or a deletion). */
export function changedFields(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): { field: string; before: unknown; after: unknown }[] {
  const fields = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])];
  return fields
    .filter((field) => JSON.stringify(before?.[field]) !== JSON.stringify(after?.[field]))
    .map((field) => ({ field, before: before?.[field], after: after?.[field] }));
}

type FieldChange = ReturnType<typeof changedFields>[number];

/** Field, before, after; a creation has no before and a deletion no after. */
function diffColumns(change: AdminChange): Column<FieldChange>[] {
  return [
    { header: 'Field', cell: (f) => <code>{f.field}</code> },
    { header: 'Before', className: 'diff-before', cell: (f) => change.before !== null && <code>{shown(f.before)}</code> },
    { header: 'After', className: 'diff-after', cell: (f) => change.after !== null && <code>{shown(f.after)}</code> },
  ];
}

function ChangeDiff({ change }: { change: AdminChange }) {
  const fields = changedFields(change.before, change.after);
  if (fields.length === 0) return <span className="muted">no field changed</span>;
  const count = plural(fields.length, 'field');
  const summary = change.before === null ? `created (${count})` : change.after === null ? `deleted (${count})` : `${count} changed`;
  return (
    <details className="diff">
      <summary>{summary}</summary>
      <Table rows={fields} columns={diffColumns(change)} rowKey={(f) => f.field} />
    </details>
  );
}

const COLUMNS: Column<Change>[] = [
  { header: 'When', title: (c) => fmtDateTime(c.timestamp), cell: (c) => timeAgo(c.timestamp) },
  { header: 'Service', cell: (c) => <Badge tone={c.service === 'gate' ? 'info' : 'neutral'}>{SERVICES[c.service]}</Badge> },
  {
    header: 'Resource',
    cell: (c) => (
      <>
        {RESOURCES[c.resource as AdminResource] ?? c.resource}
        {c.resourceId !== null && <div className="muted small">{c.resourceId}</div>}
      </>
    ),
  },
  { header: 'Action', cell: (c) => <code>{c.action}</code> },
  { header: 'Actor (key)', cell: (c) => <AuditActor entry={c} /> },
  { header: 'Change', cell: (c) => <ChangeDiff change={c} /> },
];

/**
 * Who changed which policy, key, webhook, alert rule, guardrail or setting, in both services:
 * each service's newest page merged by time. "Older" moves every service that has older entries
 * to its next page, so each change shows once, though across a page boundary the two services'
 * entries may not interleave exactly.
 */
export function ChangesPage() {
  const { query } = useLocation();
  const signedIn = credentials();
  const available = (Object.keys(SERVICES) as Service[]).filter((s) => (s === 'observe' ? signedIn.observeKey !== null : signedIn.gate !== null));
  const serviceFilter = query.get('service') ?? '';
  const resource = (query.get('resource') ?? '') as AdminResource | '';
  // From the address: an unknown value is the service's to refuse (400), shown as the page's error.
  const action = (query.get('action') ?? '') as AdminAction | '';
  const services = available.filter((s) => (serviceFilter === '' || s === serviceFilter) && asksService(s, resource));

  const filters = JSON.stringify([serviceFilter, resource, action]);
  const [paging, setPaging] = useState<{ filters: string; pages: Cursors[] }>({ filters, pages: [] });
  const pages = paging.filters === filters ? paging.pages : [];
  const cursors: Cursors = pages.at(-1) ?? {};

  const changes = useAsync(
    async (signal) => {
      const answers = await Promise.allSettled(
        services.map(async (service) => {
          const cursor = cursors[service];
          if (cursor === null) return { service, entries: [], next: null };
          const page = await adminChanges<Service>(service, { resource: resource || undefined, action: action || undefined, cursor, limit: PAGE_SIZE }, signal);
          return { service, entries: page.entries, next: page.hasMore ? page.nextCursor : null };
        }),
      );
      const loaded = answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
      const failures = answers.flatMap((a, i) => (a.status === 'rejected' ? [{ service: services[i]!, error: a.reason as Error }] : []));
      if (loaded.length === 0 && failures.length > 0) throw failures[0]!.error;
      const entries: Change[] = loaded.flatMap((l) => l.entries.map((e) => ({ ...e, service: l.service })));
      entries.sort((a, b) => b.timestamp.localeCompare(a.timestamp));
      // A service that failed is not asked again for older pages (its error stays on this one).
      const next: Cursors = Object.fromEntries([...loaded.map((l) => [l.service, l.next]), ...failures.map((f) => [f.service, null])]);
      return { entries, failures, next, hasOlder: loaded.some((l) => l.next !== null) };
    },
    [filters, JSON.stringify(cursors), services.join()],
    { pollMs: pages.length === 0 ? 10_000 : undefined },
  );

  const filtered = Boolean(serviceFilter || resource || action);

  return (
    <Page
      title="Change log"
      subtitle="Every change to policies, API keys, webhooks, alert rules, guardrails and settings, newest first: who made it, with which key, and what it changed."
    >
      <Section title="Filters">
        <Filters onClear={() => setQuery({ service: null, resource: null, action: null })} filtered={filtered}>
          <div className="field">
            <label htmlFor="changes-service">Service</label>
            <select id="changes-service" value={serviceFilter} onChange={(e) => setQuery({ service: e.target.value || null })}>
              <option value="">Both services</option>
              {available.map((s) => (
                <option key={s} value={s}>
                  {SERVICES[s]}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="changes-resource">Resource</label>
            <select id="changes-resource" value={resource} onChange={(e) => setQuery({ resource: e.target.value || null })}>
              <option value="">Any resource</option>
              {Object.entries(RESOURCES).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="changes-action">Change action</label>
            <select id="changes-action" value={action} onChange={(e) => setQuery({ action: e.target.value || null })}>
              <option value="">Any action</option>
              {ACTIONS.map((value) => (
                <option key={value} value={value}>
                  {value}
                </option>
              ))}
            </select>
          </div>
        </Filters>
      </Section>
      <Section title="Changes" actions={changes.refreshing ? <span className="muted small">refreshing…</span> : null}>
        {changes.data?.failures.map((f) => (
          <ErrorMessage key={f.service} error={f.error} title={`${SERVICES[f.service]} changes could not be read`} />
        ))}
        <AsyncTable
          state={changes}
          label="Loading the change log…"
          rows={(d) => d.entries}
          empty={filtered ? 'No change matches these filters.' : 'No administrative change recorded yet.'}
          columns={COLUMNS}
          rowKey={(c) => `${c.service}:${c.id}`}
          testId="change-log"
          after={(d) => (
            <CursorPager
              label="Change log pages"
              newer={pages.length > 0 ? () => setPaging({ filters, pages: pages.slice(0, -1) }) : undefined}
              older={d.hasOlder ? () => setPaging({ filters, pages: [...pages, d.next] }) : undefined}
            />
          )}
        />
      </Section>
    </Page>
  );
}
