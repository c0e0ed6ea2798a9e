/**
 * The pieces the rule, key and log pages are built from: a table described by its columns, a
 * create form that owns its submit button, error and result, and a set of checkboxes. Each page
 * then says only what differs: its columns, its fields, its call.
 */
import { Fragment, useState, type FormEvent, type ReactNode } from 'react';
import { credentials, gate } from './api.ts';
import { Async, ErrorMessage, Field, Notice, RowAction, Section, useAsync, useFormAction, type AsyncState } from './ui.tsx';
import { fmtDuration, type PolicyNames } from './format.ts';
import { setQuery } from './router.tsx';

export interface Column<T> {
  header: ReactNode;
  cell: (row: T) => ReactNode;
  /** Right-aligned numbers. */
  num?: boolean;
  className?: string;
  /** A tooltip for the cell, e.g. the exact time behind "5 min ago". */
  title?: (row: T) => string | undefined;
  /** The cell names its row (`<th scope="row">`). */
  rowHeader?: boolean;
}

export interface TableProps<T> {
  rows: readonly T[];
  columns: readonly Column<T>[];
  rowKey: (row: T, index: number) => string;
  /** Buttons at the end of each row, under a header only screen readers announce. */
  actions?: (row: T) => ReactNode;
  rowClassName?: (row: T) => string | undefined;
  caption?: string;
  testId?: string;
}

export function Table<T>({ rows, columns, rowKey, actions, rowClassName, caption, testId }: TableProps<T>) {
  const classOf = (column: Column<T>) => [column.num ? 'num' : undefined, column.className].filter(Boolean).join(' ') || undefined;
  return (
    <TableScroll>
      <table data-testid={testId}>
        {caption && <caption className="visually-hidden">{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column, i) => (
              <th key={i} scope="col" className={column.num ? 'num' : undefined}>
                {column.header}
              </th>
            ))}
            {actions && (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, index) => (
            <tr key={rowKey(row, index)} className={rowClassName?.(row)}>
              {columns.map((column, i) =>
                column.rowHeader ? (
                  <th key={i} scope="row" className={classOf(column)} title={column.title?.(row)}>
                    {column.cell(row)}
                  </th>
                ) : (
                  <td key={i} className={classOf(column)} title={column.title?.(row)}>
                    {column.cell(row)}
                  </td>
                ),
              )}
              {actions && <td className="actions">{actions(row)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** Holds a table that may be wider than its card (a phone): it scrolls inside, focusable so a keyboard can scroll it. */
export function TableScroll({ children }: { children: ReactNode }) {
  return (
    <div className="table-scroll" tabIndex={0}>
      {children}
    </div>
  );
}

/** Four right-aligned duration columns: the mean (headed `averageHeader`), p50, p95 and p99, as `pick` gives them. */
export function durationColumns<T>(
  averageHeader: string,
  pick: (row: T) => readonly [number | null, number | null, number | null, number | null],
): Column<T>[] {
  return [averageHeader, 'p50', 'p95', 'p99'].map((header, i) => ({ header, num: true, cell: (row: T) => fmtDuration(pick(row)[i]) }));
}

/** A table of what a request loads: loading, error with retry, empty sentence, then the rows. */
export function AsyncTable<D, T>({
  state,
  rows,
  empty,
  label,
  after,
  ...table
}: Omit<TableProps<T>, 'rows'> & { state: AsyncState<D>; rows: (data: D) => readonly T[]; empty: ReactNode; label?: string; after?: (data: D) => ReactNode }) {
  return (
    <Async state={state} label={label} isEmpty={(data) => rows(data).length === 0} empty={empty}>
      {(data) => (
        <>
          <Table rows={rows(data)} {...table} />
          {after?.(data)}
        </>
      )}
    </Async>
  );
}

export interface CreateFormProps {
  /** Creates the thing; answers what to show afterwards (a sentence, or a secret shown once). */
  create: () => Promise<string>;
  submit: string;
  /** The button's text while the call runs (default: unchanged). */
  pending?: string;
  /** The title of the error shown when the call fails. */
  failure: string;
  /** How to show `create`'s answer (default: a notice). */
  result?: (value: string, clear: () => void) => ReactNode;
  /** A Cancel button beside the submit button (an edit form that leaves unsaved). */
  cancel?: () => void;
  /** The form's accessible name, e.g. “Edit rule nightly-errors”. */
  label?: string;
  children: ReactNode;
}

/** A form that creates or saves one thing; the API's validation errors show under it, each naming its field. */
export function CreateForm({ create, submit, pending, failure, result, cancel, label, children }: CreateFormProps) {
  const action = useFormAction(create);
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    action.start();
  };
  return (
    <form onSubmit={onSubmit} className="stack" aria-label={label}>
      {children}
      <div className="row">
        <button type="submit" disabled={action.pending}>
          {action.pending && pending ? pending : submit}
        </button>
        {cancel && (
          <button type="button" className="secondary" onClick={cancel}>
            Cancel
          </button>
        )}
      </div>
      {action.error && <ErrorMessage error={action.error} title={failure} />}
      {action.done !== null && (result ? result(action.done, action.clear) : <Notice>{action.done}</Notice>)}
    </form>
  );
}

/** One checkbox per choice; `chosen` keeps the order they were ticked in. */
export function Choices<V extends string>({
  legend,
  options,
  chosen,
  onChange,
}: {
  legend: string;
  options: readonly { value: V; label: string }[];
  chosen: V[];
  onChange: (next: V[]) => void;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map((option) => (
        <label key={option.value} className="checkbox">
          <input
            type="checkbox"
            checked={chosen.includes(option.value)}
            onChange={(e) => onChange(e.target.checked ? [...chosen, option.value] : chosen.filter((x) => x !== option.value))}
          />{' '}
          {option.label}
        </label>
      ))}
    </fieldset>
  );
}

/** What `useAction` gives: a call to run, whether it runs, how it failed. */
interface Action<A extends unknown[]> {
  run: (...args: A) => Promise<unknown>;
  pending: boolean;
  error: Error | undefined;
}

export interface RowButton {
  label: string;
  run: () => void;
  pending: boolean;
  danger?: boolean;
  /** A toggle (e.g. "show this row's deliveries"): announced as pressed or not. */
  pressed?: boolean;
}

/** A row's button running `action` with `args`: `rowButton('Delete', remove, [rule], { danger: true })`. */
export function rowButton<A extends unknown[]>(label: string, action: Action<A>, args: A, options: { danger?: boolean } = {}): RowButton {
  return { label, run: () => void action.run(...args), pending: action.pending, ...options };
}

/**
 * A table of things a page manages (rules, keys, webhooks): each row ends with its buttons, named
 * for screen readers with the row's subject, and the first failure of those buttons shows above.
 */
export function ManagedTable<D, T>({
  actions,
  subject,
  buttons,
  ...table
}: Omit<Parameters<typeof AsyncTable<D, T>>[0], 'actions'> & {
  actions: readonly { error: Error | undefined }[];
  subject: (row: T) => string;
  buttons: (row: T) => RowButton[];
}) {
  const error = actions.find((a) => a.error)?.error;
  return (
    <>
      {error && <ErrorMessage error={error} />}
      <AsyncTable
        {...table}
        actions={(row) =>
          buttons(row).map((b) => (
            <RowAction
              key={b.label}
              tone={b.danger ? 'danger' : 'secondary'}
              label={b.label}
              subject={subject(row)}
              onClick={b.run}
              disabled={b.pending}
              pressed={b.pressed}
            />
          ))
        }
      />
    </>
  );
}

/** A labelled select on one line, e.g. a section's time window; answers the chosen option's own value. */
export function InlineSelect<V extends string | number>({
  id,
  label,
  value,
  options,
  onChange,
}: {
  id: string;
  label: string;
  value: V;
  options: readonly { value: V; label: string }[];
  onChange: (value: V) => void;
}) {
  return (
    <div className="field inline">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(options.find((o) => String(o.value) === e.target.value)!.value)}>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A log's filter bar: its fields, Apply (when some are typed: `onApply`) and, once something is filtered, Clear filters. */
export function Filters({ onApply, onClear, filtered, children }: { onApply?: () => void; onClear: () => void; filtered: boolean; children: ReactNode }) {
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onApply?.();
  };
  return (
    <form className="filters" onSubmit={submit}>
      {children}
      {onApply && (
        <button type="submit" className="secondary">
          Apply
        </button>
      )}
      {filtered && (
        <button type="button" className="link" onClick={onClear}>
          Clear filters
        </button>
      )}
    </form>
  );
}

/** Filters ending in an agent field: what is typed there becomes `?agent=` on Apply. `children`: the page's other filters. */
export function AgentFilters({ id, agentId, children }: { id: string; agentId: string; children: ReactNode }) {
  const [agentText, setAgentText] = useState(agentId);
  return (
    <Filters
      filtered={agentId !== ''}
      onApply={() => setQuery({ agent: agentText.trim() })}
      onClear={() => {
        setAgentText('');
        setQuery({ agent: null });
      }}
    >
      {children}
      <div className="field inline">
        <label htmlFor={id}>Agent</label>
        <input id={id} value={agentText} placeholder="all agents" onChange={(e) => setAgentText(e.target.value)} />
      </div>
    </Filters>
  );
}

/** Newer and older pages of a log read with cursors; a missing callback means there is no such page. */
export function CursorPager({ label, newer, older }: { label: string; newer?: () => void; older?: () => void }) {
  if (!newer && !older) return null;
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" className="secondary small" disabled={!newer} onClick={newer}>
        ← Newer
      </button>
      <button type="button" className="secondary small" disabled={!older} onClick={older}>
        Older →
      </button>
    </nav>
  );
}

/** A labelled one-line text input. */
export function TextField({
  id,
  label,
  value,
  onChange,
  required,
  maxLength,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  required?: boolean;
  maxLength?: number;
}) {
  return (
    <Field label={label} htmlFor={id}>
      <input required={required} maxLength={maxLength} value={value} onChange={(e) => onChange(e.target.value)} />
    </Field>
  );
}

/**
 * A list page's editing state: `edit(item)` opens the row's form (focusing the field `focusId`),
 * `saved` is the last edit's message, and `section` the state's part of EditOrCreateSection's props
 * (a save closes the form and reloads the list through `reload`).
 */
export function useEditOrCreate<T extends { id: string; name: string }>(focusId: string, reload: () => void) {
  const [editing, setEditing] = useState<T | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const edit = (item: T) => {
    setSaved(null);
    setEditing(item);
    // The form replaces the "New …" one below the list; take the reader there.
    requestAnimationFrame(() => document.getElementById(focusId)?.focus());
  };
  const section = {
    editing,
    onEdited: (message: string) => {
      setEditing(null);
      setSaved(message);
      reload();
    },
    onCreated: reload,
    onCancel: () => setEditing(null),
  };
  return { edit, saved, section };
}

/**
 * A list page's form: editing the row picked with its Edit button (prefilled, with Cancel), or
 * creating a new one. `form` renders the page's own form for `item` (undefined: a new one).
 */
export function EditOrCreateSection<T extends { id: string; name: string }>({
  editing,
  sectionId,
  newTitle,
  onEdited,
  onCreated,
  onCancel,
  form,
}: {
  editing: T | null;
  sectionId: string;
  newTitle: string;
  onEdited(message: string): void;
  onCreated(): void;
  onCancel(): void;
  form(props: { item?: T; onSaved: (message: string) => void; onCancel?: () => void }): ReactNode;
}) {
  return editing ? (
    <Section title={`Edit “${editing.name}”`} id={sectionId}>
      <Fragment key={editing.id}>{form({ item: editing, onSaved: onEdited, onCancel })}</Fragment>
    </Section>
  ) : (
    <Section title={newTitle}>{form({ onSaved: onCreated })}</Section>
  );
}

/**
 * The gate's policies' names by id, for the answers (audit entries, actors, an agent's or a
 * guardrail's approval policy) that name a policy by id only; none when not signed in to the gate.
 */
export function usePolicyNames(): PolicyNames {
  const signedIn = credentials().gate !== null;
  const policies = useAsync(async (signal) => (signedIn ? (await gate('GET /api/policies', { query: { limit: 500 }, signal })).policies : []), [signedIn]);
  return new Map(policies.data?.map((p) => [p.id, p.name]) ?? []);
}
