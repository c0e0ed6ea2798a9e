import type { HeadsStep, HeadsThreadSetup } from './audit-heads-thread.ts';
import { ThreadClient } from './threads.ts';

/**
 * The thread's V8 heap: a young generation of 2 MiB (a checkpoint's garbage is a few MiB, and the
 * default, up to 3 × 16 MiB, stays resident once grown: the thread cost observe 43 MiB of RSS after
 * an ingest of 300,000 events without it) and at most 256 MiB old (the map's tree and a draft of a
 * few thousand scopes need a few).
 */
const THREAD_HEAP = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 256 };

/**
 * A SQLite service's checkpoints drafted and committed on a worker thread with a connection of its
 * own (audit-heads-thread.ts; docs/audit.md, "Session heads"). `prepare` reads back and rehashes
 * the changed buckets while the service keeps writing (WAL readers do not wait for the writer);
 * `commit`, called while the service's own connection is held so that none of its transactions is
 * open, takes the write lock and appends the heads leaf. The thread starts on first use and ends
 * after a minute without work; a step not answered within a minute fails (a commit holds the
 * service's connection while it runs) and the next starts a new thread.
 */
export class HeadsThread {
  private readonly thread: ThreadClient<HeadsStep, number>;

  constructor(setup: HeadsThreadSetup) {
    this.thread = new ThreadClient(new URL('./audit-heads-thread.ts', import.meta.url), {
      name: 'audit heads',
      workerData: setup,
      resourceLimits: THREAD_HEAP,
      idleMs: 60_000,
      timeoutMs: 60_000,
    });
  }

  async prepare(): Promise<void> {
    await this.thread.ask('prepare');
  }

  /** Answers the tree size to sign: the log's size, ending with a heads leaf. */
  commit(): Promise<number> {
    return this.thread.ask('commit');
  }

  /** Ends the thread for good (a step still with it fails, and so does any later one). */
  close(): Promise<void> {
    return this.thread.close();
  }
}
