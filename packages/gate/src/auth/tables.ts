// The tables auth/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
  scopes: string;
  rate_limit: number | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** A dashboard or MCP sign-in: a short-lived token bound to an API key and a name. */
export interface DashboardSessionRow {
  id: string;
  token_hash: string;
  prefix: string;
  key_id: string;
  /** `dashboard` or `mcp`: the namespace of the actor (`dashboard:<name>`, `mcp:<name>`). */
  kind: 'dashboard' | 'mcp';
  name: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

/** API keys and the dashboard / MCP sign-ins made with them. */
export interface AuthTables {
  api_keys: ApiKeyRow;
  dashboard_sessions: DashboardSessionRow;
}
