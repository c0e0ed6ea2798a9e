import type { Worker } from 'node:worker_threads';
import type { HeadsReply, HeadsRequest, HeadsThreadSetup } from './audit-heads-thread.ts';
import { startThread } from './threads.ts';

/** A thread left without checkpoints this long is ended (its memory returned); the next checkpoint starts another. */
const IDLE_MS = 60_000;
/**
 * The thread's V8 heap: a young generation of 2 MiB (a checkpoint's garbage is a few MiB, and the
 * default, up to 3 × 16 MiB, stays resident once grown: the thread cost observe 43 MiB of RSS after
 * an ingest of 300,000 events without it) and at most 256 MiB old (the map's tree and a draft of a
 * few thousand scopes need a few).
 */
const THREAD_HEAP = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 256 };
/** A step not answered in this long fails and the thread is ended (a commit holds the service's connection while it runs). */
const STEP_TIMEOUT_MS = 60_000;

/**
 * A SQLite service's checkpoints drafted and committed on a worker thread with a connection of its
 * own (audit-heads-thread.ts; docs/audit.md, "Session heads"). `prepare` reads back and rehashes
 * the changed buckets while the service keeps writing (WAL readers do not wait for the writer);
 * `commit`, called while the service's own connection is held so that none of its transactions is
 * open, takes the write lock and appends the heads leaf. The thread starts on first use and ends
 * after IDLE_MS without work; a step it does not answer fails, and the next starts a new thread. close() ends it.
 */
export class HeadsThread {
  private thread: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(treeSize: number): void; reject(error: Error): void }>();
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly setup: HeadsThreadSetup) {}

  async prepare(): Promise<void> {
    await this.ask('prepare');
  }

  /** Answers the tree size to sign: the log's size, ending with a heads leaf. */
  commit(): Promise<number> {
    return this.ask('commit');
  }

  private async ask(step: HeadsRequest['step']): Promise<number> {
    if (this.closed) throw new Error('the audit heads thread is closed');
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    const thread = this.running();
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<number>((resolve, reject) => {
        this.pending.set(id, { resolve, reject });
        timer = setTimeout(() => this.lose(thread, `the audit heads thread did not answer its ${step} in ${STEP_TIMEOUT_MS / 1000} s`), STEP_TIMEOUT_MS);
        thread.postMessage({ id, step } satisfies HeadsRequest);
      });
    } finally {
      clearTimeout(timer);
      this.pending.delete(id);
      if (this.pending.size === 0) this.idleSoon();
    }
  }

  private idleSoon(): void {
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      const thread = this.thread;
      if (thread === null || this.pending.size > 0) return;
      this.thread = null;
      void thread.terminate();
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  private running(): Worker {
    if (this.thread !== null) return this.thread;
    const thread = startThread(new URL('./audit-heads-thread.ts', import.meta.url), { workerData: this.setup, resourceLimits: THREAD_HEAP });
    // An idle thread must not keep the process alive; close() ends it at shutdown.
    thread.unref();
    thread.on('message', (reply: HeadsReply) => {
      const step = this.pending.get(reply.id);
      if (step === undefined) return;
      if ('error' in reply) step.reject(new Error(reply.error));
      else step.resolve(reply.treeSize);
    });
    thread.on('error', (error) => this.lose(thread, `the audit heads thread failed: ${error.message}`));
    thread.on('exit', (code) => this.lose(thread, `the audit heads thread exited with code ${code}`));
    this.thread = thread;
    return thread;
  }

  /** The current thread failed: its steps fail, and it is ended (the next step starts another). */
  private lose(thread: Worker, reason: string): void {
    if (this.thread !== thread) return;
    this.thread = null;
    for (const step of this.pending.values()) step.reject(new Error(reason));
    this.pending.clear();
    void thread.terminate();
  }

  /** Ends the thread for good (a step still with it fails, and so does any later one). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    const thread = this.thread;
    if (thread === null) return;
    this.lose(thread, 'the audit heads thread was closed');
    await thread.terminate();
  }
}
