import type { AuditLog, LeafInput } from '@vigil/platform';
import type { GateSchema } from '../schema.ts';
import type { AuditRow } from '../requests/index.ts';

/** The log's name in what it signs. */
export const GATE_LOG = 'vigil-gate';

/** The kind of an audit entry's leaf (the leaves' `kind` column). */
export const ENTRY_LEAF = 'entry';

/** An audit entry's leaf: its chain hash (32 bytes), under its request. */
export function auditEntryLeaf(entry: Pick<AuditRow, 'id' | 'request_id' | 'hash'>): LeafInput {
  return { itemId: entry.id, scopeId: entry.request_id, kind: ENTRY_LEAF, data: Buffer.from(entry.hash, 'hex') };
}

/**
 * The gate's audit log (platform AuditLog): every audit entry a leaf (auditEntryLeaf), appended as
 * the last write of the transaction that writes the entry, after the request row locks, so the log
 * head's row lock (held to the commit) is always taken last.
 */
export type GateAuditLog = AuditLog<GateSchema>;
