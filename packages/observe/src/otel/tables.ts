// The tables otel/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

/** A span stored by OTLP ingest (otel/): its events are in `events`, metadata.otel; the row makes a resent span a no-op. */
export interface OtelSpanRow {
  trace_id: string;
  span_id: string;
  session_id: string;
  /** The span's start, epoch ms. */
  ts: number;
}

/** Spans stored by OTLP ingest. */
export interface OtelTables {
  otel_spans: OtelSpanRow;
}
