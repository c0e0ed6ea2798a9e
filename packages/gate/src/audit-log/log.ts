import { AuditLog, type Clock, type LeafInput, type ZodApp } from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { GateConfig } from '../config.ts';
import type { AuditRow, GateDatabase, GateSchema } from '../schema.ts';

/** The log's name in what it signs. */
export const GATE_LOG = 'vigil-gate';

/** An audit entry's leaf: its chain hash (32 bytes), under its request. */
export function auditEntryLeaf(entry: Pick<AuditRow, 'id' | 'request_id' | 'hash'>): LeafInput {
  return { itemId: entry.id, scopeId: entry.request_id, data: Buffer.from(entry.hash, 'hex') };
}

/**
 * The gate's audit log (platform AuditLog): every audit entry a leaf, appended in the transaction
 * that writes the entry, and a checkpoint signed every AUDIT_CHECKPOINT_EVENTS entries committed
 * through this instance (other instances count their own).
 */
export class GateAuditLog {
  readonly log: AuditLog<GateSchema>;

  constructor(
    config: GateConfig,
    database: GateDatabase,
    clock: Clock,
    appLog: ZodApp['log'],
  ) {
    this.log = AuditLog.ofService<GateSchema>(GATE_LOG, config, database, clock, appLog);
  }

  /**
   * Appends the entries' leaves: the last write of the transaction that writes them, after the
   * request row locks, so the log head's row lock (held to the commit) is always taken last.
   */
  async append(trx: Kysely<GateSchema>, entries: readonly AuditRow[]): Promise<void> {
    await this.log.append(trx, entries.map(auditEntryLeaf));
  }

  /** After the commit of `count` entries (AuditLog.committed). */
  committed(count: number): void {
    this.log.committed(count);
  }

  /** Waits for a checkpoint being signed and witness deliveries in flight (shutdown). */
  stop(): Promise<void> {
    return this.log.stop();
  }
}
