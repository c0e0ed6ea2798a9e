import { cloneElement, useCallback, useEffect, useEffectEvent, useRef, useState, type ReactElement, type ReactNode } from 'react';
import { ApiError } from './api.ts';
import { usePageTitle } from './router.tsx';

// ---------------------------------------------------------------------------------------------
// Data loading
// ---------------------------------------------------------------------------------------------

export interface AsyncState<T> {
  data: T | undefined;
  error: Error | undefined;
  /** True until the first answer (later refreshes keep showing the last data). */
  loading: boolean;
  refreshing: boolean;
  reload: () => void;
  /** Changes the loaded data in place (a live update), without a reload; nothing before the first answer. */
  update: (change: (data: T) => T) => void;
}

/**
 * Loads data for a page and reloads it when `deps` change, every `pollMs` if given (live views),
 * and on `reload()`. A newer load aborts an older one, so answers never arrive out of order.
 */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[], options: { pollMs?: number } = {}): AsyncState<T> {
  const [state, setState] = useState<{ data: T | undefined; error: Error | undefined; loading: boolean; refreshing: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
    refreshing: false,
  });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const update = useCallback((change: (data: T) => T) => setState((s) => (s.data === undefined ? s : { ...s, data: change(s.data) })), []);
  // The latest `load` without reloading when the caller passes a new function each render.
  const loadLatest = useEffectEvent(load);
  const depsKey = JSON.stringify(deps);
  const lastDeps = useRef(depsKey);

  useEffect(() => {
    const controller = new AbortController();
    const depsChanged = lastDeps.current !== depsKey;
    lastDeps.current = depsKey;
    setState((s) => (depsChanged ? { data: undefined, error: undefined, loading: true, refreshing: false } : { ...s, refreshing: true }));
    loadLatest(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setState({ data, error: undefined, loading: false, refreshing: false });
      },
      (error: unknown) => {
        if (controller.signal.aborted || (error as Error).name === 'AbortError') return;
        setState((s) => ({ data: s.data, error: error as Error, loading: false, refreshing: false }));
      },
    );
    return () => controller.abort();
  }, [depsKey, tick]);

  useEffect(() => {
    if (!options.pollMs) return;
    const timer = window.setInterval(() => {
      if (document.visibilityState === 'visible') setTick((t) => t + 1);
    }, options.pollMs);
    return () => window.clearInterval(timer);
  }, [options.pollMs]);

  return { ...state, reload, update };
}

/** The current time, read again every `everyMs`: render stays pure, and ages and countdowns still move. */
export function useNow(everyMs: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), everyMs);
    return () => window.clearInterval(timer);
  }, [everyMs]);
  return now;
}

/** Runs an action (approve, save, delete …) with a pending flag and its error in words. */
export function useAction<A extends unknown[], R>(
  action: (...args: A) => Promise<R>,
): {
  run: (...args: A) => Promise<R | undefined>;
  pending: boolean;
  error: Error | undefined;
  clearError: () => void;
} {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const run = async (...args: A): Promise<R | undefined> => {
    setPending(true);
    setError(undefined);
    try {
      return await action(...args);
    } catch (caught) {
      setError(caught as Error);
      return undefined;
    } finally {
      setPending(false);
    }
  };
  return { run, pending, error, clearError: () => setError(undefined) };
}

/**
 * An action a form runs, answering the sentence to show once it succeeded: `start(...args)` clears
 * the last sentence and runs it; `done` is that sentence until the next start or `clear()`.
 */
export function useFormAction<A extends unknown[]>(action: (...args: A) => Promise<string>) {
  const [done, setDone] = useState<string | null>(null);
  const { run, pending, error } = useAction(async (...args: A) => setDone(await action(...args)));
  const start = (...args: A) => {
    setDone(null);
    void run(...args);
  };
  return { start, pending, error, done, clear: () => setDone(null) };
}

// ---------------------------------------------------------------------------------------------
// Layout pieces
// ---------------------------------------------------------------------------------------------

export function Page({ title, subtitle, actions, children }: { title: string; subtitle?: ReactNode; actions?: ReactNode; children: ReactNode }) {
  usePageTitle(title);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    // After a navigation, focus lands on the new page's heading (keyboard and screen-reader users start there).
    if (document.activeElement === document.body || document.activeElement?.closest('nav')) heading.current?.focus({ preventScroll: true });
  }, [title]);
  return (
    <>
      <header className="page-header">
        <div>
          <h1 tabIndex={-1} ref={heading}>
            {title}
          </h1>
          {subtitle && <p className="subtitle">{subtitle}</p>}
        </div>
        {actions && <div className="page-actions">{actions}</div>}
      </header>
      {children}
    </>
  );
}

export function Section({ title, actions, children, id }: { title: string; actions?: ReactNode; children: ReactNode; id?: string }) {
  const headingId = id ?? `section-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="card-header">
        <h2 id={headingId}>{title}</h2>
        {actions && <div className="card-actions">{actions}</div>}
      </div>
      {children}
    </section>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

export function ErrorMessage({ error, retry, title }: { error: Error; retry?: () => void; title?: string }) {
  const details = error instanceof ApiError ? error.details : [];
  const status = error instanceof ApiError && error.status > 0 ? ` (HTTP ${error.status})` : '';
  return (
    <div className="error" role="alert">
      <p>
        <strong>{title ?? 'Something went wrong'}:</strong> {error.message}
        {status}
      </p>
      {details.length > 0 && (
        <ul>
          {details.map((d, i) => (
            <li key={i}>
              {d.path ? <code>{d.path}</code> : null} {d.message}
            </li>
          ))}
        </ul>
      )}
      {retry && (
        <button type="button" className="secondary small" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** Renders loading, error and empty states around the data. */
export function Async<T>({
  state,
  children,
  isEmpty,
  empty,
  label,
}: {
  state: AsyncState<T>;
  children: (data: T) => ReactNode;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  label?: string;
}) {
  if (state.data === undefined) {
    if (state.error) return <ErrorMessage error={state.error} retry={state.reload} />;
    return <Loading label={label} />;
  }
  return (
    <>
      {state.error && <ErrorMessage error={state.error} retry={state.reload} title="Could not refresh" />}
      {isEmpty?.(state.data) ? <Empty>{empty ?? 'Nothing here yet.'}</Empty> : children(state.data)}
    </>
  );
}

export type Tone = 'neutral' | 'good' | 'bad' | 'warn' | 'info';

/**
 * A small button acting on one row of a table; screen readers hear the row it acts on
 * ("Delete nightly-errors"), sighted users the short label.
 */
export function RowAction({
  tone,
  label,
  subject,
  onClick,
  disabled,
  pressed,
}: {
  tone: 'secondary' | 'danger';
  label: string;
  subject: string;
  onClick: () => void;
  disabled?: boolean;
  pressed?: boolean;
}) {
  return (
    <button type="button" className={`${tone} small`} onClick={onClick} disabled={disabled} aria-pressed={pressed}>
      {label}
      <span className="visually-hidden"> {subject}</span>
    </button>
  );
}

export function Badge({ tone = 'neutral', children, title }: { tone?: Tone; children: ReactNode; title?: string }) {
  return (
    <span className={`badge badge-${tone}`} title={title}>
      {children}
    </span>
  );
}

const STATUS_TONES: Record<string, Tone> = {
  active: 'info',
  completed: 'good',
  error: 'bad',
  pending: 'warn',
  approved: 'good',
  denied: 'bad',
  expired: 'neutral',
  delivered: 'good',
  failed: 'bad',
  running: 'info',
  draft: 'neutral',
  cancelled: 'neutral',
  critical: 'bad',
  high: 'warn',
  normal: 'info',
  low: 'neutral',
  improving: 'good',
  stable: 'neutral',
  degrading: 'bad',
};

export function StatusBadge({ status }: { status: string }) {
  return <Badge tone={STATUS_TONES[status] ?? 'neutral'}>{status}</Badge>;
}

export function Stat({ label, value, hint }: { label: string; value: ReactNode; hint?: ReactNode }) {
  return (
    <div className="stat">
      <div className="stat-label">{label}</div>
      <div className="stat-value">{value}</div>
      {hint && <div className="stat-hint">{hint}</div>}
    </div>
  );
}

export function Stats({ children }: { children: ReactNode }) {
  return <div className="stats">{children}</div>;
}

export function JsonView({ value, label }: { value: unknown; label?: string }) {
  const text = value === undefined ? '—' : JSON.stringify(value, null, 2);
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      {text}
    </pre>
  );
}

/** A polite live region: success messages after an action. */
export function Notice({ children }: { children: ReactNode }) {
  return (
    <p className="notice" role="status">
      {children}
    </p>
  );
}

/** The control a Field labels: Field gives it its id and, with a hint, points its aria-describedby at the hint. */
type FieldControl = ReactElement<{ id?: string; 'aria-describedby'?: string }>;

export function Field({ label, hint, children, htmlFor }: { label: string; hint?: ReactNode; children: FieldControl; htmlFor: string }) {
  const hintId = `${htmlFor}-hint`;
  return (
    <div className="field">
      <label htmlFor={htmlFor}>{label}</label>
      {cloneElement(children, { id: htmlFor, ...(hint ? { 'aria-describedby': hintId } : {}) })}
      {hint && (
        <small className="hint" id={hintId}>
          {hint}
        </small>
      )}
    </div>
  );
}

export function Pager({
  offset,
  limit,
  total,
  onChange,
  label,
}: {
  offset: number;
  limit: number;
  total: number;
  onChange: (offset: number) => void;
  label: string;
}) {
  if (total <= limit && offset === 0) return null;
  const last = Math.min(offset + limit, total);
  return (
    <nav className="pager" aria-label={`${label} pages`}>
      <button type="button" className="secondary small" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - limit))}>
        ← Newer
      </button>
      <span>
        {total === 0 ? 0 : offset + 1}–{last} of {total}
      </span>
      <button type="button" className="secondary small" disabled={last >= total} onClick={() => onChange(offset + limit)}>
        Older →
      </button>
    </nav>
  );
}

export function Meter({ value, max = 100, label }: { value: number; max?: number; label: string }) {
  const ratio = Math.max(0, Math.min(1, value / max));
  const tone = ratio >= 0.8 ? 'good' : ratio >= 0.5 ? 'warn' : 'bad';
  return (
    <span className="meter" role="meter" aria-valuemin={0} aria-valuemax={max} aria-valuenow={value} aria-label={label}>
      <span className={`meter-fill meter-${tone}`} style={{ width: `${ratio * 100}%` }} />
    </span>
  );
}

export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** A secret shown once (a new API key), with a copy button. */
export function SecretOnce({ label, value, onDone }: { label: string; value: string; onDone?: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret" role="status">
      <p>
        <strong>{label}</strong> It is shown only this once; Vigil stores only its SHA-256.
      </p>
      <code className="secret-value">{value}</code>
      <div className="row">
        <button type="button" className="secondary small" onClick={() => void copyText(value).then(setCopied)}>
          {copied ? 'Copied' : 'Copy'}
        </button>
        {onDone && (
          <button type="button" className="secondary small" onClick={onDone}>
            Done
          </button>
        )}
      </div>
    </div>
  );
}
