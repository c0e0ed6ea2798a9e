/**
 * `@vigil/sdk/node`: the SDK with what only Node (and Bun and Deno, which load node: modules)
 * offers. Importing it makes the ambient session follow async work through AsyncLocalStorage, and
 * its ObserveClient sends queued events when the process is about to exit and, with `spoolDir`,
 * keeps them in a disk spool that survives the process (see spool.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { resolve } from 'node:path';
import { setSessionScope } from './ambient.ts';
import { ObserveClient as CoreObserveClient, type ObserveClientOptions as CoreObserveClientOptions } from './observe.ts';
import type { CloseOptions, CloseResult } from './queue.ts';
import type { VigilSession } from './session.ts';
import { DiskSpool } from './spool.ts';
import type { IncomingEvent } from './types.ts';

export * from './index.ts';

const ambient = new AsyncLocalStorage<VigilSession>();
setSessionScope({
  current: () => ambient.getStore(),
  run: (session, fn) => ambient.run(session, fn),
});

export interface ObserveClientOptions extends CoreObserveClientOptions {
  /**
   * Send what is queued when the process is about to exit normally (`beforeExit`), and report
   * events a process.exit() cut off to onError (default true). A process killed with SIGKILL sends
   * nothing: call `await client.close()` in your SIGTERM/SIGINT handler.
   */
  flushOnExit?: boolean;
  /**
   * A directory for the disk spool (default: none). Each event is written there before track()
   * returns and removed once stored, so a crash (kill -9) loses nothing: the next client on the
   * directory sends what is left — a batch already sent with its original Idempotency-Key, so it
   * is stored once. One process per directory (a lock): the constructor throws VigilSpoolError
   * when another running process holds it.
   */
  spoolDir?: string;
  /** Bytes the spool holds at most (default 256 MiB); events beyond it are dropped and reported (`spool_full`). */
  maxSpoolBytes?: number;
}

/** Clients with events queued, for the process's exit hooks (one pair, however many clients). */
const exiting = new Set<ObserveClient>();
let hooked = false;

function hookProcessExit(): void {
  if (hooked) return;
  hooked = true;
  // Sending keeps the event loop alive; beforeExit fires again afterwards, with nothing left to send.
  process.on('beforeExit', () => {
    for (const client of exiting) if (client.pendingEvents > 0) void client.flush().catch(() => undefined);
  });
  process.on('exit', () => {
    for (const client of exiting) {
      client.discardPending('the process exited before they were sent');
      client.spool?.release();
    }
  });
}

export class ObserveClient extends CoreObserveClient {
  private readonly flushOnExit: boolean;
  /** The disk spool, with `spoolDir`. */
  readonly spool: DiskSpool<IncomingEvent> | undefined;

  constructor(options: ObserveClientOptions = {}) {
    const spool = options.spoolDir === undefined ? undefined : new DiskSpool<IncomingEvent>(resolve(options.spoolDir), options.maxSpoolBytes);
    super(options, spool);
    this.spool = spool;
    this.flushOnExit = options.flushOnExit ?? true;
    this.queue.keepsProcessAlive = !this.flushOnExit;
    // What an earlier process left in the spool is being sent already: the exit hooks cover it too.
    if (this.pendingEvents > 0) this.watchExit();
  }

  override track(...args: Parameters<CoreObserveClient['track']>): void {
    super.track(...args);
    this.watchExit();
  }

  /** As the core's close(); the spool's lock is released afterwards (what it still holds stays for the next start). */
  override async close(options?: CloseOptions): Promise<CloseResult> {
    const result = await super.close(options);
    this.spool?.release();
    exiting.delete(this);
    return result;
  }

  private watchExit(): void {
    if (this.flushOnExit && !exiting.has(this)) {
      hookProcessExit();
      exiting.add(this);
    }
  }
}
