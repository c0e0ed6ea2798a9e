// The tables grants/ owns (times are epoch milliseconds); the service's schema (schema.ts) is
// composed of every feature's tables.

/**
 * A time-limited grant: a human's standing approval of one action for one agent and/or session,
 * until `expires_at` and/or for `max_uses` uses. Its governed columns (store.ts grantState) are
 * recorded in the change log at creation and revocation; `uses` moves with every use (grant_uses).
 */
export interface GrantRow {
  id: string;
  action: string;
  agent_id: string | null;
  session_id: string | null;
  expires_at: number | null;
  max_uses: number | null;
  /** Uses taken so far: moved by the conditional update that takes one (never past max_uses). */
  uses: number;
  /** The request the grant was made from, when it was. */
  request_id: string | null;
  note: string | null;
  created_at: number;
  created_by: string;
  created_by_key_id: string | null;
  revoked_at: number | null;
  revoked_by: string | null;
}

/** One use of a grant: the request it approved. (grant_id, use_no) is the primary key, so no use number is taken twice. */
export interface GrantUseRow {
  grant_id: string;
  use_no: number;
  request_id: string;
  used_at: number;
}

export interface GrantsTables {
  grants: GrantRow;
  grant_uses: GrantUseRow;
}
