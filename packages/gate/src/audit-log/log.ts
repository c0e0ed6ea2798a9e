import { AuditLog, loadSigningKey, type Clock, type LeafInput, type ZodApp } from '@vigil/platform';
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
  private sinceCheckpoint = 0;
  private signing: Promise<unknown> | null = null;
  private readonly checkpointEvents: number;

  constructor(
    config: GateConfig,
    database: GateDatabase,
    clock: Clock,
    private readonly appLog: ZodApp['log'],
  ) {
    this.checkpointEvents = config.audit.checkpointEvents;
    this.log = new AuditLog<GateSchema>({
      name: GATE_LOG,
      db: database.db,
      dialect: database.dialect,
      key: loadSigningKey(config.audit.signingKey, config.dataDir),
      clock,
      witnesses: config.audit.witnesses,
      log: appLog,
    });
  }

  /**
   * Appends the entries' leaves: the last write of the transaction that writes them, after the
   * request row locks, so the log head's row lock (held to the commit) is always taken last.
   */
  async append(trx: Kysely<GateSchema>, entries: readonly AuditRow[]): Promise<void> {
    await this.log.append(trx, entries.map(auditEntryLeaf));
  }

  /** After the commit of `count` entries: a checkpoint once enough were committed through this instance. */
  committed(count: number): void {
    this.sinceCheckpoint += count;
    if (this.sinceCheckpoint < this.checkpointEvents || this.signing !== null) return;
    this.sinceCheckpoint = 0;
    this.signing = this.log
      .checkpoint()
      .catch((error: unknown) => this.appLog.error({ err: error }, 'audit checkpoint failed'))
      .finally(() => (this.signing = null));
  }

  /** Waits for a checkpoint being signed and witness deliveries in flight (shutdown). */
  async stop(): Promise<void> {
    await this.signing;
    await this.log.stop();
  }
}
