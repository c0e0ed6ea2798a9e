import { useMemo, useState } from 'react';
import type { ObserveAnswer } from './api.ts';
import { fmtDuration, fmtNumber, fmtUsd } from './format.ts';
import { Badge, Notice, type Tone } from './ui.tsx';
import { VirtualList } from './virtual-list.tsx';

export type SessionTree = ObserveAnswer<'GET /api/sessions/{id}/tree'>;
type TreeNode = SessionTree['roots'][number];

const KIND_TONES: Record<TreeNode['kind'], Tone> = {
  llm: 'info',
  tool: 'warn',
  agent: 'good',
  chain: 'neutral',
  retriever: 'neutral',
  embedding: 'neutral',
  other: 'neutral',
  event: 'neutral',
};

/** The rows shown: depth-first, without the children of collapsed nodes. */
function visibleRows(roots: readonly TreeNode[], collapsed: ReadonlySet<string>): { node: TreeNode; depth: number }[] {
  const rows: { node: TreeNode; depth: number }[] = [];
  const stack = [...roots].reverse().map((node) => ({ node, depth: 0 }));
  while (stack.length > 0) {
    const row = stack.pop()!;
    rows.push(row);
    if (!collapsed.has(row.node.id)) {
      for (let i = row.node.children.length - 1; i >= 0; i--) stack.push({ node: row.node.children[i]!, depth: row.depth + 1 });
    }
  }
  return rows;
}

const rowKey = (row: { node: TreeNode }): string => row.node.id;

function parentIds(roots: readonly TreeNode[]): string[] {
  const ids: string[] = [];
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.children.length > 0) ids.push(node.id);
    stack.push(...node.children);
  }
  return ids;
}

/** What a node did, in a few words: model and tokens, the tool, the cost. */
function details(node: TreeNode): string {
  const parts: string[] = [];
  if (node.kind === 'llm' && node.model && !node.name.includes(node.model)) parts.push(node.model);
  if (node.toolName && node.toolName !== node.name) parts.push(node.toolName);
  if (node.inputTokens !== undefined || node.outputTokens !== undefined) {
    parts.push(`${fmtNumber(node.inputTokens ?? 0)} → ${fmtNumber(node.outputTokens ?? 0)} tokens`);
  }
  if (node.costUsd !== undefined) parts.push(fmtUsd(node.costUsd));
  if (node.error) parts.push(node.error);
  return parts.join(' · ');
}

/**
 * The session as a collapsible tree of spans and call pairs, each row with a bar placed by its
 * start and end on the session's span (the waterfall).
 */
export function TraceTree({ tree }: { tree: SessionTree }) {
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const origin = tree.startTime === null ? 0 : Date.parse(tree.startTime);
  const span = Math.max(tree.durationMs, 1);
  const rows = useMemo(() => visibleRows(tree.roots, collapsed), [tree.roots, collapsed]);
  const toggle = (id: string) =>
    setCollapsed((current) => {
      const next = new Set(current);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  const nested = tree.roots.some((root) => root.children.length > 0);

  return (
    <div className="trace-tree">
      {tree.truncated && (
        <Notice>
          This session has more than {fmtNumber(tree.eventLimit)} events: the tree shows the first {fmtNumber(tree.eventCount)}.
        </Notice>
      )}
      {nested && (
        <div className="trace-tree-actions">
          <button type="button" className="secondary small" onClick={() => setCollapsed(new Set())}>
            Expand all
          </button>
          <button type="button" className="secondary small" onClick={() => setCollapsed(new Set(parentIds(tree.roots)))}>
            Collapse all
          </button>
        </div>
      )}
      <div className="trace-axis" aria-hidden="true">
        <span>Step</span>
        <span className="trace-axis-scale">
          <span>0</span>
          <span>{fmtDuration(span / 2)}</span>
          <span>{fmtDuration(tree.durationMs)}</span>
        </span>
      </div>
      {/* A list of disclosure buttons: Tab reaches every toggle, Enter or Space opens and closes it. */}
      <VirtualList
        as="ul"
        label="Trace tree of the session"
        className="trace-rows"
        items={rows}
        itemKey={rowKey}
        estimate={29}
        renderItem={({ node, depth }) => {
          const hasChildren = node.children.length > 0;
          const open = !collapsed.has(node.id);
          const left = ((Date.parse(node.startTime) - origin) / span) * 100;
          const width = (node.durationMs / span) * 100;
          return (
            <li key={node.id} aria-level={depth + 1} className={`trace-row trace-${node.status}`} data-testid="tree-row" data-depth={depth}>
              <div className="trace-label" style={{ paddingLeft: `${depth * 1.1}rem` }}>
                {hasChildren ? (
                  <button
                    type="button"
                    className="trace-toggle"
                    aria-label={`${open ? 'Collapse' : 'Expand'} ${node.name}`}
                    aria-expanded={open}
                    onClick={() => toggle(node.id)}
                  >
                    {open ? '▾' : '▸'}
                  </button>
                ) : (
                  <span className="trace-toggle" aria-hidden="true" />
                )}
                <Badge tone={KIND_TONES[node.kind]}>{node.kind}</Badge>
                <a href={`#event-${node.eventIds[0]}`} className="trace-name" title={node.eventTypes.join(' + ')}>
                  {node.name}
                </a>
                {node.status === 'error' && <Badge tone="bad">error</Badge>}
                {node.status === 'open' && (
                  <Badge tone="warn" title="A call without its outcome (yet)">
                    open
                  </Badge>
                )}
                <span className="trace-details muted">{details(node)}</span>
              </div>
              <div className="trace-track">
                <span
                  className="trace-bar"
                  data-testid="tree-bar"
                  style={{ left: `${Math.min(left, 100)}%`, width: `${Math.min(width, 100 - Math.min(left, 100))}%` }}
                />
                {/* The label follows the bar, or precedes it when the bar ends near the right edge. */}
                <span
                  className={`trace-duration${left + width > 80 ? ' trace-duration-before' : ''}`}
                  style={left + width > 80 ? { right: `${100 - Math.min(left, 100)}%` } : { left: `${left + width}%` }}
                >
                  {node.status === 'open' ? `${fmtDuration(node.durationMs)} so far` : fmtDuration(node.durationMs)}
                </span>
              </div>
            </li>
          );
        }}
      />
    </div>
  );
}
