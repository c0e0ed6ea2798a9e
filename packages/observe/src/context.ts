import type { Clock, Feature, ServiceMetrics } from '@vigil/platform';
import type { PriceTable } from '@vigil/pricing';
import type { ObserveConfig } from './config.ts';
import type { DerivedTable, EventAppender } from './events/index.ts';
import type { Embedder, VectorIndex } from './recall/index.ts';
import type { ObserveDatabase } from './schema.ts';

/** What every feature of the observe service is built from. */
export interface ObserveContext {
  config: ObserveConfig;
  database: ObserveDatabase;
  clock: Clock;
  /** The one write path for events (group commit). */
  events: EventAppender;
  /**
   * The tables derived from events (events/derived-tables.ts), as the owning features declare them
   * and the service registers them: ingest keeps them, retention subtracts from them, the
   * /api/audit/derived/* listings page them for `vigil verify --deep`.
   */
  derivedTables: readonly DerivedTable[];
  /** Model prices (built-in table plus MODEL_PRICES), built once at start. */
  prices: PriceTable;
  /** Embedding backend of recall and context (local unless EMBEDDINGS_URL is set). */
  embedder: Embedder;
  /** This process's in-memory index of the stored vectors (recall/vector-index.ts). */
  vectorIndex: VectorIndex;
  /** The Prometheus registry of GET /metrics; features add their counters and queues. */
  metrics: ServiceMetrics;
}

/** A feature of the observe service (platform/feature.ts): its routes, jobs, subscriptions and shutdown. */
export type ObserveFeature<Handle = void> = Feature<ObserveContext, Handle>;
