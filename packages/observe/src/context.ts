import type { ChangeResources, Clock, Feature, LoggedStates, ServiceMetrics, SubjectHasher } from '@vigil/platform';
import type { PriceTable } from '@vigil/pricing';
import { ALERT_RULE_CHANGES } from './alerts/index.ts';
import { API_KEY_CHANGES } from './auth/index.ts';
import type { ObserveConfig } from './config.ts';
import { GUARDRAIL_CHANGES } from './guardrails/index.ts';
import { LEGAL_HOLD_CHANGES } from './holds/index.ts';
import { REDACTION_RULE_CHANGES } from './redaction/index.ts';
import { SETTINGS_CHANGES } from './settings/index.ts';
import type { DerivedTable, EventAppender } from './events/index.ts';
import type { Embedder, VectorIndex } from './recall/index.ts';
import type { ObserveDatabase, ObserveSchema } from './schema.ts';
import type { EventSealer } from './encryption/index.ts';

/**
 * What the log of administrative changes records (GET /api/audit/changes): the resource name each
 * feature that records changes declares. The route's `resource` filter is this list, and the
 * schema's change rows are typed by it, so `recordChange` takes no other name.
 */
export const OBSERVE_CHANGE_RESOURCES = [
  API_KEY_CHANGES,
  ALERT_RULE_CHANGES,
  GUARDRAIL_CHANGES,
  SETTINGS_CHANGES,
  REDACTION_RULE_CHANGES,
  LEGAL_HOLD_CHANGES,
] as const;
export type ObserveChangeResource = (typeof OBSERVE_CHANGE_RESOURCES)[number];

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
  /** OBSERVE_CHANGE_RESOURCES, for the change log's route. */
  changeResources: ChangeResources<ObserveChangeResource>;
  /** Whether a governed row (an API key, the retention setting) is as its last logged change left it (platform logged-state.ts). */
  loggedStates: LoggedStates<ObserveSchema>;
  /** The keyed hash data subjects' ids are recorded under (platform subjects.ts). */
  subjects: SubjectHasher;
  /** Seals events' payload and metadata at ingest and opens them for every reader (encryption/; a pass-through when ENCRYPTION_KEY_FILE is unset). */
  sealer: EventSealer;
}

/** A feature of the observe service (platform/feature.ts): its routes, jobs, subscriptions and shutdown. */
export type ObserveFeature<Handle = void> = Feature<ObserveContext, Handle>;
