import { useState, type ReactNode } from 'react';
import type { Column } from './components.tsx';
import { Link } from './router.tsx';

/**
 * Picking two sessions of a list to compare (the Sessions page): a checkbox column and the link to
 * the compare page. A third pick replaces the older of the two.
 */
export function useCompareSelection(): { column: Column<{ id: string }>; action: ReactNode } {
  const [picked, setPicked] = useState<string[]>([]);
  const toggle = (id: string, on: boolean) => setPicked((ids) => (on ? [...ids.filter((x) => x !== id), id].slice(-2) : ids.filter((x) => x !== id)));
  const column: Column<{ id: string }> = {
    // Last, so the session's link stays the row's first cell.
    header: 'Compare',
    // Named "Compare" and described by the session: a name holding the session's id would also
    // answer to a search for the page's other labels (an id like "billing-agent-7" to "Agent").
    cell: (s) => (
      <>
        <input
          type="checkbox"
          aria-label="Compare"
          aria-describedby={`compare-${encodeURIComponent(s.id)}`}
          checked={picked.includes(s.id)}
          onChange={(e) => toggle(s.id, e.target.checked)}
        />
        <span id={`compare-${encodeURIComponent(s.id)}`} className="visually-hidden">
          session {s.id}
        </span>
      </>
    ),
  };
  const [a, b] = picked;
  const action =
    a && b ? (
      <Link to={`/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`} className="button small">
        Compare the two picked sessions
      </Link>
    ) : (
      <span className="muted small" aria-live="polite">
        Pick two sessions to compare them{a ? ' (one picked)' : ''}
      </span>
    );
  return { column, action };
}
