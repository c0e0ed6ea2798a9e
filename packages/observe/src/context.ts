import type { Clock } from '@vigil/platform';
import type { ObserveConfig } from './config.ts';
import type { EventAppender } from './events/ingest.ts';
import type { PriceTable } from '@vigil/pricing';
import type { Embedder } from './recall/embedder.ts';
import type { VectorIndex } from './recall/vector-index.ts';
import type { ObserveDatabase } from './schema.ts';

/** What every feature of the observe service is built from. */
export interface ObserveContext {
  config: ObserveConfig;
  database: ObserveDatabase;
  clock: Clock;
  /** The one write path for events (group commit). */
  events: EventAppender;
  /** Model prices (built-in table plus MODEL_PRICES), built once at start. */
  prices: PriceTable;
  /** Embedding backend of recall and context (local unless EMBEDDINGS_URL is set). */
  embedder: Embedder;
  /** This process's in-memory index of the stored vectors (recall/vector-index.ts). */
  vectorIndex: VectorIndex;
}
