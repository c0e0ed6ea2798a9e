import { useCallback, useImperativeHandle, useLayoutEffect, useMemo, useRef, useState, type ReactElement, type Ref } from 'react';

/** Lists up to this long render whole; longer ones render only the rows near the visible part. */
export const WINDOW_FROM = 200;
/** Rows rendered beyond the visible part on each side, in px, so a scroll step shows rendered rows. */
const OVERSCAN_PX = 800;

export interface VirtualListHandle {
  /** Scrolls the list so that row `index` is rendered and at the top of its scroll area; resolves with its element. */
  scrollToIndex(index: number): Promise<HTMLElement | null>;
}

export interface VirtualListProps<T> {
  items: readonly T[];
  itemKey: (item: T) => string;
  /** One row: an <li> (the list's direct child, whose height is measured). */
  renderItem: (item: T, index: number) => ReactElement;
  /** A row's height before it is measured, in px. */
  estimate: number;
  as: 'ol' | 'ul';
  /** The list element's accessible name and class. */
  label: string;
  className?: string;
  handle?: Ref<VirtualListHandle>;
}

/** The first index whose row ends below `y` (offsets[i] is row i's top; offsets[count] the total). */
function rowAt(offsets: Float64Array, y: number): number {
  let low = 0;
  let high = offsets.length - 1;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (offsets[mid + 1]! <= y) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * A list whose long form (over WINDOW_FROM rows) keeps a bounded number of rows in the page: it
 * scrolls in its own area (focusable, so the keyboard scrolls it), renders the rows within
 * OVERSCAN_PX of what is visible, and stands in for the others with padding of their height
 * (measured once rendered, `estimate` before). A 10,000-event session then costs a few dozen rows
 * of DOM and React work per scroll step instead of 10,000 at once.
 */
export function VirtualList<T>({ items, itemKey, renderItem, estimate, as: List, label, className, handle }: VirtualListProps<T>) {
  const windowed = items.length > WINDOW_FROM;
  const scroller = useRef<HTMLDivElement>(null);
  const list = useRef<HTMLOListElement & HTMLUListElement>(null);
  // Measured heights by key, so that a row keeps its height when rows are added or filtered.
  const [heights, setHeights] = useState<ReadonlyMap<string, number>>(new Map());
  const [view, setView] = useState({ top: 0, height: 800 });

  const offsets = useMemo(() => {
    const tops = new Float64Array(items.length + 1);
    for (let i = 0; i < items.length; i++) tops[i + 1] = tops[i]! + (heights.get(itemKey(items[i]!)) ?? estimate);
    return tops;
  }, [items, itemKey, estimate, heights]);

  const start = windowed ? rowAt(offsets, view.top - OVERSCAN_PX) : 0;
  const end = windowed ? Math.min(items.length, rowAt(offsets, view.top + view.height + OVERSCAN_PX) + 1) : items.length;

  /** Notes the rendered rows' heights; re-renders when one differs from what the offsets assumed. */
  const measure = useCallback(() => {
    const rows = list.current?.children;
    if (!windowed || !rows) return;
    const learnt: [string, number][] = [];
    for (let k = 0; k < rows.length && start + k < end; k++) {
      const key = itemKey(items[start + k]!);
      const height = (rows[k] as HTMLElement).offsetHeight;
      if (height > 0 && heights.get(key) !== height) learnt.push([key, height]);
    }
    if (learnt.length > 0) setHeights((known) => new Map([...known, ...learnt]));
  }, [windowed, items, itemKey, start, end, heights]);

  // What the observer and the handle read, as of the last render.
  const latest = useRef({ measure, start, offsets });
  useLayoutEffect(() => {
    latest.current = { measure, start, offsets };
  });

  // Every rendered row is observed: the observer reports each one's size once it is laid out (before
  // it is painted), and again when it changes (a payload opened), and the rows below it move.
  const observer = useRef<ResizeObserver | null>(null);
  useLayoutEffect(() => {
    if (!windowed) return;
    const rows = new ResizeObserver(() => latest.current.measure());
    observer.current = rows;
    return () => rows.disconnect();
  }, [windowed]);
  useLayoutEffect(() => {
    const rows = observer.current;
    if (!rows || !list.current) return;
    rows.disconnect();
    for (const row of list.current.children) rows.observe(row);
  });

  useLayoutEffect(() => {
    const el = scroller.current;
    if (!windowed || !el) return;
    let frame = 0;
    const onScroll = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => setView({ top: el.scrollTop, height: el.clientHeight }));
    };
    onScroll();
    el.addEventListener('scroll', onScroll, { passive: true });
    return () => {
      cancelAnimationFrame(frame);
      el.removeEventListener('scroll', onScroll);
    };
  }, [windowed]);

  useImperativeHandle(
    handle,
    () => ({
      async scrollToIndex(index) {
        const el = scroller.current;
        if (el) {
          el.scrollTop = latest.current.offsets[index] ?? 0;
          setView({ top: el.scrollTop, height: el.clientHeight });
          // Two frames: React renders the row, then its measured neighbours settle.
          await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
          el.scrollTop = latest.current.offsets[index] ?? 0;
        }
        return (list.current?.children[index - latest.current.start] as HTMLElement | undefined) ?? null;
      },
    }),
    [],
  );

  const rows = (
    <List
      ref={list}
      className={className}
      aria-label={label}
      style={windowed ? { paddingTop: offsets[start], paddingBottom: offsets[items.length]! - offsets[end]! } : undefined}
    >
      {items.slice(start, end).map((item, k) => renderItem(item, start + k))}
    </List>
  );
  if (!windowed) return rows;
  return (
    // Focusable: a keyboard scrolls the area once it has the focus.
    <div ref={scroller} className="virtual-scroll" tabIndex={0} role="region" aria-label={`${label} (scrolls)`} data-testid="virtual-scroll">
      {rows}
    </div>
  );
}
