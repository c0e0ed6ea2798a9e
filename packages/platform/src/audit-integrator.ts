import type { Kysely } from 'kysely';
import type { AuditLog, AuditLogTables } from './audit-log.ts';
import type { DatabaseConfig } from './config.ts';
import { electLeader } from './leadership.ts';

/**
 * The audit log's integrator (docs/audit.md, "The integrator"): of the instances sharing a
 * database, exactly one at a time builds the log's inner nodes and signs its checkpoints, the
 * leader of leadership.ts; every instance appends leaves in its own transactions, in commit order,
 * as before. Every `pollMs` the leader looks at the log and signs a checkpoint when it has grown
 * since the latest one (so a leaf waits about `pollMs` plus the signing for its checkpoint), and the
 * other instances try to take the lead (so a dead leader is replaced within about `pollMs`). An
 * instance that needs a checkpoint or nodes while it follows wakes the leader and waits for them
 * (AuditLog.checkpoint, build).
 */
export interface AuditIntegrator {
  /** Whether this instance leads. */
  leading(): boolean;
  /** One round now: a check of the lead, then the leader's work (tests; the timer runs them otherwise). */
  round(): Promise<void>;
  stop(): Promise<void>;
}

export async function startAuditIntegrator<Schema extends AuditLogTables>(options: {
  log: AuditLog<Schema>;
  database: DatabaseConfig;
  db: Kysely<Schema>;
  pollMs: number;
  logger: { warn(object: object, message: string): void; error(object: object, message: string): void };
}): Promise<AuditIntegrator> {
  const { log, pollMs, logger } = options;
  let woken = false;
  let running: Promise<void> | null = null;
  let stopped = false;
  const round = (): Promise<void> => {
    running ??= (async () => {
      if (stopped) return;
      const was = leadership.leading();
      const leads = await leadership.check();
      if (leads !== was && options.database.kind === 'postgres')
        logger.warn({ log: log.name, leading: leads }, leads ? 'audit integrator: this instance leads' : 'audit integrator: lead lost');
      if (!leads) return;
      const asked = woken;
      woken = false;
      await log.integrate(asked);
    })()
      .catch((error: unknown) => logger.error({ err: error, log: log.name }, 'audit integrator round failed'))
      .finally(() => {
        running = null;
      });
    return running;
  };
  const leadership = await electLeader({
    database: options.database,
    db: options.db,
    role: `${log.name}-integrator`,
    onWake: () => {
      woken = true;
      void round();
    },
  });
  log.attachIntegrator({ leading: () => leadership.leading(), wake: () => leadership.wake() });
  await round();
  const timer = setInterval(() => void round(), pollMs);
  timer.unref();
  return {
    leading: () => leadership.leading(),
    round,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      await leadership.stop();
    },
  };
}
