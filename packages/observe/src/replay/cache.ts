/**
 * The replay state cache (docs/api.md#limits: at most 100 entries, least recently used eviction, time to
 * live 10 minutes). One entry per session, for the chain head (last seq and hash) it was loaded at.
 * An entry holds the session's events in timeline order, their pairing and summary, and checkpoints
 * of the replay state every CHECKPOINT_EVERY steps (plus the state where the last page ended), so a
 * page starting at step N resumes from the nearest checkpoint at or before N instead of replaying
 * from step 0.
 *
 * Only a session whose chain verified is cached, and every hit verifies the stored chain again
 * first: the verdict a replay answers with is always computed from the rows at request time (an
 * edit made directly in the database bumps no counter, so nothing cheaper would see it). A hit
 * needs the chain valid and ending at the entry's head: the head hash commits to every event, so the
 * cached events are then exactly the stored ones. Otherwise (a new event, or a broken chain) the
 * entry is dropped and the session reloaded; a broken session is served uncached.
 *
 * The TTL counts from the load (a hit refreshes recency, not expiry). Besides the 100 entries, the
 * cache holds at most MAX_CACHED_EVENTS events in total (older entries are evicted first; a single
 * larger session is still cached, alone), so memory stays bounded whatever the sessions' sizes.
 */
import { MINUTE_MS, type Clock } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import type { SessionRow } from '../events/index.ts';
import { matchesReplayFilter, pairEvents, ReplayState, summarize, type ReplayEvent, type ReplayEventType, type ReplaySummary } from './state.ts';

export const REPLAY_CACHE_MAX_ENTRIES = 100;
export const REPLAY_CACHE_TTL_MS = 10 * MINUTE_MS;
export const CHECKPOINT_EVERY = 500;
export const MAX_CACHED_EVENTS = 500_000;

/** Counters a test (or an operator) can read. */
export interface ReplayCacheStats {
  /** Requests served from a cached entry. */
  hits: number;
  /** Requests that had to load the session's events from the database. */
  misses: number;
  /** Entries dropped as least recently used (over 100 entries or the event budget). */
  evictions: number;
  /** Entries dropped because they were older than the TTL. */
  expirations: number;
  /** Entries dropped because the session gained events or its chain no longer verifies. */
  invalidations: number;
  /** Replay steps applied to a state, over all requests. */
  stepsAdvanced: number;
  /** Checkpoints saved. */
  checkpointsSaved: number;
  /** Where the last state was resumed from. */
  lastResume: { from: 'start' | 'checkpoint' | 'cursor'; position: number; target: number } | null;
}

export interface ChainHeadKey {
  lastSeq: number;
  lastHash: string | null;
}

/** The session now: its row and whether its stored chain verifies. */
export interface CheckedSession {
  session: SessionRow;
  chainValid: boolean;
}

/** What a load produces: the session, its chain verdict and its events in timeline order. */
export interface LoadedReplay extends CheckedSession {
  events: ReplayEvent[];
}

/** How the cache reads a session (each undefined when there is no such session). */
export interface ReplaySource {
  /** The chain verified from the stored events, without building a replay. */
  verify(): Promise<CheckedSession | undefined>;
  load(): Promise<LoadedReplay | undefined>;
}

/** A replay to answer with: the session and verdict read for this request, the steps from the cache or the load. */
export interface ServedReplay extends CheckedSession {
  replay: ReplaySession;
}

/** One cached session. */
export class ReplaySession {
  readonly partner: Int32Array;
  readonly summary: ReplaySummary;
  /** checkpoints[k] = state after the first k × checkpointEvery events. */
  private readonly checkpoints: (ReplayState | undefined)[] = [];
  /** The state where the last page ended, owned by the session until a request takes it. */
  private cursor: ReplayState | null = null;
  private readonly filtered = new Map<string, Int32Array>();

  constructor(
    readonly head: ChainHeadKey,
    readonly events: ReplayEvent[],
    private readonly stats: ReplayCacheStats,
    private readonly checkpointEvery = CHECKPOINT_EVERY,
  ) {
    this.partner = pairEvents(events);
    this.summary = summarize(events, this.partner);
  }

  /** Indexes (in the full replay) of the steps a filter keeps, computed once per filter. */
  stepIndexes(filter: readonly ReplayEventType[]): Int32Array {
    const key = [...filter].sort().join(',');
    let indexes = this.filtered.get(key);
    if (indexes === undefined) {
      const wanted = new Set(filter);
      const kept: number[] = [];
      for (let i = 0; i < this.events.length; i++) if (matchesReplayFilter(this.events[i]!, wanted)) kept.push(i);
      indexes = Int32Array.from(kept);
      this.filtered.set(key, indexes);
    }
    return indexes;
  }

  /**
   * A state with exactly the first `position` events applied or fewer (the caller advances it):
   * the cursor when it is at or before `position` and no checkpoint is closer, else a copy of the
   * nearest checkpoint, else a fresh state. The caller owns the result.
   */
  stateAt(position: number): ReplayState {
    let checkpoint: ReplayState | undefined;
    for (let k = Math.floor(position / this.checkpointEvery); k >= 1 && checkpoint === undefined; k--) checkpoint = this.checkpoints[k];
    const cursor = this.cursor;
    let state: ReplayState;
    let from: 'start' | 'checkpoint' | 'cursor';
    if (cursor !== null && cursor.position <= position && cursor.position >= (checkpoint?.position ?? 0)) {
      this.cursor = null;
      state = cursor;
      from = 'cursor';
    } else if (checkpoint !== undefined) {
      state = checkpoint.clone();
      from = 'checkpoint';
    } else {
      state = new ReplayState(this.events.length);
      from = 'start';
    }
    this.stats.lastResume = { from, position: state.position, target: position };
    return state;
  }

  /** Applies events until `position` events are applied, saving a checkpoint at every multiple of checkpointEvery. */
  advanceTo(state: ReplayState, position: number): void {
    while (state.position < position) {
      state.advance(this.events[state.position]!);
      this.stats.stepsAdvanced += 1;
      if (state.position % this.checkpointEvery === 0) {
        const k = state.position / this.checkpointEvery;
        if (this.checkpoints[k] === undefined) {
          this.checkpoints[k] = state.clone();
          this.stats.checkpointsSaved += 1;
        }
      }
    }
  }

  /** Hands a state back: it becomes the cursor the next page can continue from. */
  release(state: ReplayState): void {
    this.cursor = state;
  }
}

interface Entry {
  session: ReplaySession;
  loadedAt: number;
}

export interface ReplayCacheOptions {
  maxEntries?: number;
  ttlMs?: number;
  maxEvents?: number;
  checkpointEvery?: number;
}

export class ReplayCache {
  readonly stats: ReplayCacheStats = {
    hits: 0,
    misses: 0,
    evictions: 0,
    expirations: 0,
    invalidations: 0,
    stepsAdvanced: 0,
    checkpointsSaved: 0,
    lastResume: null,
  };
  /** Insertion order is recency order: the first key is the least recently used. */
  private readonly entries = new Map<string, Entry>();
  /** Loads in flight, so simultaneous misses of one session load it once. */
  private readonly loading = new Map<string, Promise<ServedReplay | undefined>>();
  private events = 0;
  private readonly maxEntries: number;
  private readonly ttlMs: number;
  private readonly maxEvents: number;
  private readonly checkpointEvery: number;

  constructor(
    private readonly clock: Clock,
    options: ReplayCacheOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? REPLAY_CACHE_MAX_ENTRIES;
    this.ttlMs = options.ttlMs ?? REPLAY_CACHE_TTL_MS;
    this.maxEvents = options.maxEvents ?? MAX_CACHED_EVENTS;
    this.checkpointEvery = options.checkpointEvery ?? CHECKPOINT_EVERY;
  }

  get size(): number {
    return this.entries.size;
  }

  has(sessionId: string): boolean {
    return this.entries.has(sessionId);
  }

  /**
   * The session's replay: the cached one when the session's chain verifies now and ends at the
   * entry's head, else a fresh one from `source.load` (cached when its chain verified).
   */
  async get(sessionId: string, source: ReplaySource): Promise<ServedReplay | undefined> {
    const entry = this.entries.get(sessionId);
    if (entry !== undefined) {
      if (this.clock.now() - entry.loadedAt >= this.ttlMs) {
        this.remove(sessionId);
        this.stats.expirations += 1;
      } else {
        const checked = await source.verify();
        const current = this.entries.get(sessionId) === entry;
        if (checked === undefined) {
          if (current) this.remove(sessionId);
          return undefined;
        }
        const { head } = entry.session;
        if (checked.chainValid && head.lastSeq === checked.session.last_seq && head.lastHash === checked.session.last_hash) {
          if (current) {
            this.entries.delete(sessionId);
            this.entries.set(sessionId, entry);
          }
          this.stats.hits += 1;
          return { ...checked, replay: entry.session };
        }
        if (current) this.remove(sessionId);
        this.stats.invalidations += 1;
      }
    }
    this.stats.misses += 1;
    let flight = this.loading.get(sessionId);
    if (flight === undefined) {
      flight = source.load().then((loaded) => {
        if (loaded === undefined) return undefined;
        const { session, chainValid, events } = loaded;
        const replay = new ReplaySession({ lastSeq: session.last_seq, lastHash: session.last_hash }, events, this.stats, this.checkpointEvery);
        if (chainValid) this.insert(sessionId, replay);
        return { session, chainValid, replay };
      });
      this.loading.set(sessionId, flight);
      void flight.then(
        () => this.loading.delete(sessionId),
        () => this.loading.delete(sessionId),
      );
    }
    return flight;
  }

  /** Forgets a session (e.g. it no longer exists). */
  delete(sessionId: string): void {
    this.remove(sessionId);
  }

  private remove(sessionId: string): void {
    const entry = this.entries.get(sessionId);
    if (entry === undefined) return;
    this.entries.delete(sessionId);
    this.events -= entry.session.events.length;
  }

  private insert(sessionId: string, session: ReplaySession): void {
    const current = this.entries.get(sessionId);
    // A load that finished after a newer one for the same session must not replace it.
    if (current !== undefined && current.session.head.lastSeq > session.head.lastSeq) return;
    this.remove(sessionId);
    this.entries.set(sessionId, { session, loadedAt: this.clock.now() });
    this.events += session.events.length;
    while (this.entries.size > this.maxEntries || (this.events > this.maxEvents && this.entries.size > 1)) {
      const oldest = this.entries.keys().next().value as string;
      this.remove(oldest);
      this.stats.evictions += 1;
    }
  }
}

const caches = new WeakMap<ObserveContext, ReplayCache>();

/** Drops the cached replays of these sessions (an erasure: the cache keeps no erased content). */
export function forgetReplays(ctx: ObserveContext, sessionIds: Iterable<string>): void {
  const cache = caches.get(ctx);
  if (cache !== undefined) for (const id of sessionIds) cache.delete(id);
}

/** The replay cache of one running service. */
export function replayCacheOf(ctx: ObserveContext): ReplayCache {
  let cache = caches.get(ctx);
  if (cache === undefined) {
    cache = new ReplayCache(ctx.clock);
    caches.set(ctx, cache);
  }
  return cache;
}
