import { databaseFailure, type DialectName } from './db.ts';

/**
 * Groups of audited writes (observe's ingest, the gate's request creations) a service commits at
 * once. SQLite has one writer. On PostgreSQL each such transaction holds the audit log head's row
 * lock from appending its leaves to its commit, so they pass that section one at a time: with two in
 * flight one inserts its rows while the other holds the lock; more only wait on the lock and split
 * the queue into smaller groups. Measured against four (docs/scale.md, Several writers): observe's
 * ingest +15 to +30 % events/s and −15 % PostgreSQL CPU per event, the gate's creations +13 to +26 %.
 */
export function auditedGroupsInFlight(dialect: DialectName): number {
  return dialect === 'sqlite' ? 1 : 2;
}

/**
 * Group commit. Items submitted while a group is being committed (or in the same event-loop turn)
 * are committed together by one call of `commitGroup`, so the per-transaction cost (locks, commit,
 * WAL write or round trips) is paid once per group instead of once per request. Each item keeps its
 * own outcome: if a group fails, its items are retried one by one, so only the item at fault fails.
 */
export class GroupCommitter<Item, Result> {
  private readonly queue: { item: Item; resolve(result: Result): void; reject(error: unknown): void }[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    /** Commits the items in one transaction; returns one result per item, in order. */
    private readonly commitGroup: (items: Item[]) => Promise<Result[]>,
    private readonly options: {
      /** Concurrent groups (auditedGroupsInFlight for audited writes). */
      maxInFlight: number;
      /** Upper bound on the summed `sizeOf` of one group (an item larger than this goes alone). */
      maxGroupSize: number;
      sizeOf?: (item: Item) => number;
    },
  ) {}

  submit(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Starts groups after the current I/O phase, so requests parsed together commit together. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.drain();
    });
  }

  private drain(): void {
    const sizeOf = this.options.sizeOf ?? (() => 1);
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const group = [this.queue.shift()!];
      let size = sizeOf(group[0]!.item);
      while (this.queue.length > 0 && size + sizeOf(this.queue[0]!.item) <= this.options.maxGroupSize) {
        const next = this.queue.shift()!;
        size += sizeOf(next.item);
        group.push(next);
      }
      this.inFlight += 1;
      void this.commit(group).finally(() => {
        this.inFlight -= 1;
        if (this.queue.length > 0) this.schedule();
      });
    }
  }

  private async commit(group: typeof this.queue): Promise<void> {
    if (group.length > 1) {
      try {
        const results = await this.commitGroup(group.map((entry) => entry.item));
        group.forEach((entry, i) => entry.resolve(results[i]!));
        return;
      } catch (error) {
        // The database is unreachable: every item would fail alike, and a group whose COMMIT reached
        // the server before the connection dropped must not be written a second time.
        if (databaseFailure(error) === 'unavailable') {
          for (const entry of group) entry.reject(error);
          return;
        }
        // Otherwise fall through: each item on its own, so one failure cannot refuse the others.
      }
    }
    for (const entry of group) {
      try {
        entry.resolve((await this.commitGroup([entry.item]))[0]!);
      } catch (error) {
        entry.reject(error);
      }
    }
  }
}
