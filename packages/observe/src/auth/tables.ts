// The tables auth/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
  /** JSON array of scopes (auth/scopes.ts); null for a key created before scopes: full access. */
  scopes: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** A short-lived token that opens GET /api/stream for a key (browsers' EventSource sends no headers). */
export interface StreamTokenRow {
  token_hash: string;
  /** The key that created it; null when created with AUTH_DISABLED. */
  key_id: string | null;
  expires_at: number;
}

/** API keys and the short-lived tokens that open the live stream for a key. */
export interface AuthTables {
  api_keys: ApiKeyRow;
  stream_tokens: StreamTokenRow;
}
