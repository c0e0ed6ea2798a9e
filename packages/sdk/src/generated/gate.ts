// Generated from the gate service's OpenAPI document (GET /api/openapi.json) by
// packages/sdk/scripts/generate.ts. Do not edit: run `npm run generate -w @vigil/sdk`.
// packages/sdk/src/generated.test.ts fails when this file and the served document differ.
/* eslint-disable */

export type AdminChange = {
  id: string;
  timestamp: string;
  /** The resource changed: one of the names the `resource` filter takes */
  resource: string;
  resourceId: string | null;
  action: string;
  actor: string;
  actorKeyId: string | null;
  actorKeyName: string | null;
  before: {
    [key: string]: unknown;
  } | null;
  after: {
    [key: string]: unknown;
  } | null;
};

/** Progress of a request whose rule needs several approvals (docs/guide/approvers.md); null when one decision settles it */
export type ApprovalProgress = {
  /** Approvals from distinct deciders that approve the request */
  required: number;
  /** Denials that deny it (1: any deny denies) */
  denialsRequired: number;
  /** Approver groups whose members (or their delegates) may vote; empty: anyone who may decide */
  groups: string[];
  /** Who approved so far (a delegate’s vote counts for its delegator), oldest first */
  approvedBy: string[];
  deniedBy: string[];
} | null;

/** An approval receipt (docs/guide/receipts.md) */
export type ApprovalReceipt = {
  v: 1;
  requestId: string;
  action: string;
  /** Hex SHA-256 of the RFC 8785 canonical JSON of the params */
  argsDigest: string;
  decision: "approved";
  decidedBy: {
    keyId: string;
    name: string;
  } | {
    user: string;
  };
  policyId: string | null;
  issuedAt: string;
  expiresAt: string;
  nonce: string;
  keyId: string;
  /** base64url Ed25519 signature over the RFC 8785 canonical JSON of every other field */
  signature: string;
};

export type ApprovalRequest = {
  id: string;
  action: string;
  params: {
    [key: string]: unknown;
  };
  context: {
    [key: string]: unknown;
  };
  status: "pending" | "approved" | "denied" | "expired";
  urgency: "low" | "normal" | "high" | "critical";
  decidedBy: string | null;
  decisionReason: string | null;
  createdAt: string;
  decidedAt: string | null;
  expiresAt: string | null;
  confirmedAt: string | null;
  executionResult: unknown;
  policyDecision: {
    decision: "auto_approve" | "auto_deny" | "route_to_human" | "route_to_agent";
    policyId: string | null;
    approvers: string[];
    channels: string[];
    requireReason: boolean;
  };
  escalation: RequestEscalation;
  approvals: ApprovalProgress;
  /** The approval receipt (GET /api/requests/:id/receipt); null unless approved */
  receipt: ApprovalReceipt | null;
};

export type ApproverGroup = {
  id: string;
  name: string;
  description: string | null;
  members: string[];
  createdAt: string;
  updatedAt: string;
};

export type AuditChainVerdict = {
  requestId: string;
  valid: boolean;
  entryCount: number;
  headSeq: number;
  headHash: string | null;
  brokenAt: number | null;
  reason: string | null;
  /** The erasures whose signed leaves account for the request's erased entries (details replaced by the erasure marker); empty when none */
  erasures: {
    erasureId: string;
    entryIds: string[];
  }[];
};

export type AuditEntry = {
  id: string;
  timestamp: string;
  event: string;
  actor: string;
  actorKeyId: string | null;
  actorKeyName: string | null;
  details?: {
    [key: string]: unknown;
  };
  seq: number;
  prevHash: string | null;
  hash: string;
  chainValid: boolean;
};

export type AuditListEntry = {
  id: string;
  requestId: string;
  action: string;
  timestamp: string;
  event: string;
  actor: string;
  actorKeyId: string | null;
  actorKeyName: string | null;
  details?: {
    [key: string]: unknown;
  };
  seq: number;
  prevHash: string | null;
  hash: string;
  eventType: string;
  createdAt: string;
};

export type Budget = {
  id: string;
  name: string;
  scope: "agent" | "session" | "tag" | "tenant";
  scopeValue: string | null;
  window: "session" | "hour" | "day" | "month";
  softUsd: number | null;
  hardUsd: number | null;
  pauseOnHard: boolean;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
};

export type BudgetDetail = {
  id: string;
  name: string;
  scope: "agent" | "session" | "tag" | "tenant";
  scopeValue: string | null;
  window: "session" | "hour" | "day" | "month";
  softUsd: number | null;
  hardUsd: number | null;
  pauseOnHard: boolean;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
  /** The start of the current window (the Unix epoch for session windows) */
  windowStart: string;
  /** The current window: the spend read from observe per agent, session, tag or tenant (`*`), highest first */
  figures: {
    key: string;
    spendUsd: number;
    level: "ok" | "soft" | "hard";
    agentIds: string[];
    updatedAt: string;
  }[];
  /** Thresholds crossed, newest first (each is also a `breached` entry of the change log) */
  breaches: {
    key: string;
    level: "soft" | "hard";
    spendUsd: number;
    windowStart: string;
    at: string;
  }[];
};

export type CreatedApprovalRequest = {
  id: string;
  action: string;
  params: {
    [key: string]: unknown;
  };
  context: {
    [key: string]: unknown;
  };
  status: "pending" | "approved" | "denied" | "expired";
  urgency: "low" | "normal" | "high" | "critical";
  decidedBy: string | null;
  decisionReason: string | null;
  createdAt: string;
  decidedAt: string | null;
  expiresAt: string | null;
  confirmedAt: string | null;
  executionResult: unknown;
  policyDecision: {
    decision: "auto_approve" | "auto_deny" | "route_to_human" | "route_to_agent";
    policyId: string | null;
    approvers: string[];
    channels: string[];
    requireReason: boolean;
  };
  escalation: RequestEscalation;
  approvals: ApprovalProgress;
  /** The approval receipt (GET /api/requests/:id/receipt); null unless approved */
  receipt: ApprovalReceipt | null;
  /** Only with `redeem: true`: the receipt, redeemed for this credential in the same transaction, when a policy approved at once; else null */
  redemption?: ReceiptRedemption | null;
};

export type Delegation = {
  id: string;
  delegator: string;
  delegate: string;
  startsAt: string;
  endsAt: string;
  reason: string | null;
  createdAt: string;
  revokedAt: string | null;
  /** Started, not ended, not revoked */
  active: boolean;
};

export type ErrorDetail = {
  /** Dotted path of the offending field; empty for the whole body */
  path: string;
  message: string;
};

export type GateApiKey = {
  id: string;
  name: string;
  prefix: string;
  scopes: ("admin" | "request:create" | "request:read" | "request:decide" | "webhook:manage")[];
  rateLimit: number | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};

export type GateErasureReceipt = {
  erasureId: string;
  /** HMAC-SHA256 of the subject's id under the subject key (SUBJECT_HASH_KEY, shared with observe): the raw id is not kept */
  subject: string;
  reason: string;
  /** Who asked: the API key, as the change log names it */
  requestedBy: string;
  erasedAt: string;
  requestCount: number;
  requestIds: string[];
  /** Verify offline with `vigil verify erasure-receipt FILE --public-key KEY` */
  leaf: {
    /** The erasure leaf's index in the gate's audit log (prove it included with GET /api/audit/proof/... of a checkpoint) */
    index: number;
    /** The leaf data: canonical JSON naming the subject, every erased request (id and requestHash) and audit entry (id and chain hash), the reason, the requester, the time and the key */
    body: string;
    /** The audit key's Ed25519 signature over the UTF-8 bytes of body, base64 */
    signature: string;
    keyId: string;
    /** The raw Ed25519 public key, base64 */
    publicKey: string;
  };
};

export type GateError = {
  error: {
    /** Stable, for programs to branch on */
    code: "unauthorized" | "forbidden" | "not_found" | "payload_too_large" | "uri_too_long" | "internal_error" | "bad_request" | "request_timeout" | "unsupported_media_type" | "headers_too_large" | "unavailable" | "redaction_failed" | "conflict" | "cosignature_invalid" | "receipt_expired" | "receipt_mismatch" | "rate_limited";
    /** What went wrong, for a person to read */
    message: string;
    details?: ErrorDetail[];
  };
};

export type Grant = {
  id: string;
  action: string;
  agentId: string | null;
  sessionId: string | null;
  expiresAt: string | null;
  maxUses: number | null;
  uses: number;
  usesLeft: number | null;
  status: "active" | "expired" | "used_up" | "revoked";
  requestId: string | null;
  note: string | null;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
};

export type GrantDetail = {
  id: string;
  action: string;
  agentId: string | null;
  sessionId: string | null;
  expiresAt: string | null;
  maxUses: number | null;
  uses: number;
  usesLeft: number | null;
  status: "active" | "expired" | "used_up" | "revoked";
  requestId: string | null;
  note: string | null;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
  /** Every use: the request it approved, in order */
  usedBy: {
    use: number;
    requestId: string;
    usedAt: string;
  }[];
};

export type JsonRpcError = {
  jsonrpc: "2.0";
  error: {
    code: number;
    message: string;
  };
  id: string | number | null;
};

export type McpToolVerdict = {
  decision: "allow" | "deny";
  status?: "denied";
  toolName: string;
  requiredScope: string | null;
  reason: string | null;
};

export type Policy = {
  id: string;
  name: string;
  priority: number;
  enabled: boolean;
  rules: {
    match: {
      [key: string]: string | number | boolean | null | {
        $lt?: number;
        $gt?: number;
        $lte?: number;
        $gte?: number;
        $in?: (string | number)[];
        $regex?: string;
      };
    };
    decision: "auto_approve" | "auto_deny" | "route_to_human" | "route_to_agent";
    approvers?: string[];
    channels?: string[];
    requireReason?: boolean;
    onDeadline?: {
      escalate: {
        approvers: string[];
        channels: string[];
        timeoutSeconds: number;
      }[];
      reason?: string;
      remindBeforeSeconds: number;
    };
    quorum?: {
      approvals: number;
      denials: number;
      groups: string[];
    };
  }[];
  createdAt: string;
  updatedAt: string;
};

export type ReceiptRedemption = {
  requestId: string;
  action: string;
  redeemedAt: string;
  /** The actor of the credential that redeemed it */
  redeemedBy: string;
  /** The API key behind that credential */
  keyId: string | null;
};

export type RequestBudgets = {
  /** The enabled budgets that cover the request now (by its context: agent, session, tags), with their current spend, by name */
  budgets: {
    name: string;
    spendUsd: number;
    softUsd: number | null;
    hardUsd: number | null;
    level: "ok" | "soft" | "hard";
  }[];
};

export type RequestEscalation = {
  /** The escalation tier reached (0: the rule's own deciders; docs/guide/escalation.md) */
  tier: number;
  /** When the current deadline passes (expiresAt, then each tier’s); null: none, or decided */
  deadlineAt: string | null;
  /** When the deciders are reminded next; null: no reminder due */
  remindAt: string | null;
};

export type Webhook = {
  id: string;
  url: string;
  events: ("request.created" | "request.decided" | "request.expired" | "request.confirmed" | "request.redeemed" | "request.escalated" | "request.reminder" | "request.voted")[];
  enabled: boolean;
  hasSecret: boolean;
  createdAt: string;
  updatedAt: string;
};

export interface paths {
  "/api/api-keys": {
    /**
     * List API keys (never the secrets)
     *
     * Scope: `admin`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          keys: GateApiKey[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Create an API key; the raw key is in this response only
     *
     * rateLimit is requests per minute; omitted or null means unlimited.
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        scopes: ("admin" | "request:create" | "request:read" | "request:decide" | "webhook:manage")[];
        rateLimit?: number | null;
      };
      bodyRequired: true;
      responses: {
        201: {
          id: string;
          name: string;
          prefix: string;
          scopes: ("admin" | "request:create" | "request:read" | "request:decide" | "webhook:manage")[];
          rateLimit: number | null;
          createdAt: string;
          lastUsedAt: string | null;
          revokedAt: string | null;
          key: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/api-keys/{id}": {
    /**
     * Revoke an API key (it stops working at once)
     *
     * Scope: `admin`.
     */
    delete: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          id: string;
          revoked: true;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Change a key’s name, scopes or rate limit
     *
     * Scope: `admin`.
     */
    patch: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        name?: string;
        scopes?: ("admin" | "request:create" | "request:read" | "request:decide" | "webhook:manage")[];
        rateLimit?: number | null;
      };
      bodyRequired: true;
      responses: {
        200: GateApiKey;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        413: GateError;
        414: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/approver-groups": {
    /**
     * List approver groups by name
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          groups: ApproverGroup[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Create an approver group (`group:<name>` in a rule’s approvers or quorum)
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        /** Decider names as the gate derives them: slack:U1, discord:42, api:<key name>, dashboard:<user>, mcp:<client> */
        members: string[];
        description?: string | null;
      };
      bodyRequired: true;
      responses: {
        201: ApproverGroup;
        400: GateError;
        401: GateError;
        403: GateError;
        409: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/approver-groups/{id}": {
    /**
     * Change an approver group (fields not given stay as they are)
     *
     * Scope: `admin`.
     */
    put: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        name?: string;
        /** Decider names as the gate derives them: slack:U1, discord:42, api:<key name>, dashboard:<user>, mcp:<client> */
        members?: string[];
        description?: string | null;
      };
      bodyRequired: true;
      responses: {
        200: ApproverGroup;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        413: GateError;
        414: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Delete an approver group
     *
     * Scope: `admin`.
     */
    delete: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          id: string;
          deleted: true;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit": {
    /**
     * Audit entries of all requests, newest first, with the API key behind each actor
     *
     * Filters (all optional, combined with AND): `action` (the request’s action), `event` (or `eventType`), `status` (the request’s current status), `actor` (exact), `keyId` (the API key behind the actor), `requestId`, `from` and `to` (ISO 8601, inclusive). Pages by cursor: pass `nextCursor` of one answer as `cursor` of the next, with the same filters; it is null on the last page. `offset` pages the AgentGate way instead (not with `cursor`); `pagination` gives the total either way (`pagination.offset`: the entries before this page, by cursor too). Unknown query parameters are a 400, so a misspelt filter never widens the answer. Each entry’s `eventType` and `createdAt` repeat `event` and `timestamp` for AgentGate’s clients.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        action?: string;
        event?: "created" | "approved" | "denied" | "expired" | "confirmed" | "decision_refused" | "redeemed";
        eventType?: "created" | "approved" | "denied" | "expired" | "confirmed" | "decision_refused" | "redeemed";
        status?: "pending" | "approved" | "denied" | "expired";
        actor?: string;
        keyId?: string;
        requestId?: string;
        from?: string;
        to?: string;
        cursor?: string;
        offset?: number;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          entries: AuditListEntry[];
          nextCursor: string | null;
          hasMore: boolean;
          pagination: {
            total: number;
            limit: number;
            offset: number;
            hasMore: boolean;
          };
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/actors": {
    /**
     * Every actor that appears in the audit, sorted (for a filter list)
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          actors: string[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/changes": {
    /**
     * Administrative changes, newest first: who changed what, with the API key behind the actor, before and after
     *
     * Every creation, change, enabling, disabling, deletion or revocation of an administrative resource, written in the transaction of the change. Snapshots are the resource as the API shows it, so they never contain a secret. Filters (all optional, combined with AND): `resource`, `resourceId`, `action`, `keyId` (the API key behind the actor), `from` and `to` (ISO 8601, inclusive). Pages by cursor: pass `nextCursor` of one answer as `cursor` of the next, with the same filters; it is null on the last page. Unknown query parameters are a 400.
     *
     * Scope: `admin`.
     */
    get: {
      params: Record<string, never>;
      query: {
        resource?: "policy" | "api_key" | "webhook" | "approver_group" | "delegation" | "grant" | "budget";
        resourceId?: string;
        action?: "created" | "updated" | "enabled" | "disabled" | "deleted" | "revoked" | "breached";
        keyId?: string;
        from?: string;
        to?: string;
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          entries: AdminChange[];
          nextCursor: string | null;
          hasMore: boolean;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/checkpoint": {
    /**
     * The latest signed checkpoint of the audit log, or the one at a tree size
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        treeSize?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          treeSize: number;
          /** MTH of the first treeSize leaves (RFC 9162), hex */
          rootHash: string;
          timestamp: string;
          /** Hex of the first 16 bytes of SHA-256 of the raw Ed25519 public key */
          keyId: string;
          /** Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-gate", rootHash, timestamp, treeSize} (docs/audit.md) */
          signature: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Sign a checkpoint at the current tree size now
     *
     * Answers the existing checkpoint when one was already signed at the current size.
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        201: {
          treeSize: number;
          /** MTH of the first treeSize leaves (RFC 9162), hex */
          rootHash: string;
          timestamp: string;
          /** Hex of the first 16 bytes of SHA-256 of the raw Ed25519 public key */
          keyId: string;
          /** Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-gate", rootHash, timestamp, treeSize} (docs/audit.md) */
          signature: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        409: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/checkpoints": {
    /**
     * The checkpoints signed in a period, with their C2SP notes and cosignatures
     *
     * In tree-size order: the last checkpoint signed before `from` (when there is one: what the period's first extends), then those signed from `from` to `to` (inclusive), at most 100000; `truncated` says there were more.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from: string;
        to: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          checkpoints: {
            /** A signed tree head of the audit log */
            checkpoint: {
              treeSize: number;
              /** MTH of the first treeSize leaves (RFC 9162), hex */
              rootHash: string;
              timestamp: string;
              /** Hex of the first 16 bytes of SHA-256 of the raw Ed25519 public key */
              keyId: string;
              /** Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-gate", rootHash, timestamp, treeSize} (docs/audit.md) */
              signature: string;
            };
            /** The same tree head as a C2SP signed note; null for checkpoints signed before notes were */
            note: string | null;
            /** The witnesses' cosignature lines (tlog-cosignature) stored for it */
            cosignatures: string[];
          }[];
          truncated: boolean;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/consistency": {
    /**
     * A consistency proof between two tree sizes (RFC 9162 §2.1.4)
     *
     * Verify with the roots of the checkpoints at `from` and `to`. Empty when from = to, or from = 0.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from: number;
        to: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          from: number;
          to: number;
          proof: string[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        409: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/erasures": {
    /**
     * Every erasure leaf of the gate's audit log: its index, its data and the log key's signature (what `vigil verify` holds erased requests to)
     *
     * `from` and `to` (ISO 8601, inclusive; optional) keep the erasures made in that period (an evidence pack’s deletion receipts), read from an index on the erasure time.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from?: string;
        to?: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          erasures: {
            erasureId: string;
            leafIndex: number;
            body: string;
            signature: string;
          }[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/evidence-signature": {
    /**
     * Sign an evidence pack's manifest digest with the audit key
     *
     * Answers the Ed25519 signature, by the current audit key, over the canonical JSON of {keyId, kind: "evidence-manifest", log, manifestSha256, timestamp} (docs/audit.md, "Evidence packs"). Each signing is written to the service log with the digest and the API key that asked.
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        /** SHA-256 of the manifest file, lowercase hex */
        manifestSha256: string;
      };
      bodyRequired: true;
      responses: {
        201: {
          log: string;
          keyId: string;
          publicKey: string;
          timestamp: string;
          signature: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/export": {
    /**
     * A request's self-contained audit bundle (verify it with `vigil verify`)
     *
     * Every stored entry of the request as the canonical text its chain hash is computed over, in seq order, with the recorded head, each entry's leaf index and inclusion proof to a signed checkpoint (signed now when the latest one does not cover every leaf of the request), the key that signed it and, with `since`, a consistency proof from that tree size. Format `vigil-audit-bundle/1` (docs/audit.md).
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        requestId: string;
        since?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          format: "vigil-audit-bundle/1";
          log: string;
          requestId: string;
          head: {
            seq: number;
            hash: string | null;
          };
          /** RFC 8785 canonical JSON of each entry's chain object; its SHA-256 is the entry hash */
          entries: string[];
          leaves: ({
            index: number;
            proof: string[];
          } | null)[];
          /** A signed tree head of the audit log */
          checkpoint: {
            treeSize: number;
            /** MTH of the first treeSize leaves (RFC 9162), hex */
            rootHash: string;
            timestamp: string;
            /** Hex of the first 16 bytes of SHA-256 of the raw Ed25519 public key */
            keyId: string;
            /** Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-gate", rootHash, timestamp, treeSize} (docs/audit.md) */
            signature: string;
          };
          /** Base64 of the raw Ed25519 key that signed the checkpoint */
          publicKey: string;
          /** Every key rotation the checkpoint's log records: the new key, its certificate signed by the key it replaced (its key-rotation leaf's data) and that leaf's inclusion proof, so that a verifier holding only an older key can trust the key that signed the checkpoint */
          certificates: {
            publicKey: string;
            leafIndex: number;
            body: string;
            signature: string;
            proof: string[];
          }[];
          /** The signed erasure leaves covering entries of the request whose content was erased (docs/guide/erasure.md): each leaf's data, the log key's signature over it and its inclusion proof */
          erasures: {
            leafIndex: number;
            body: string;
            signature: string;
            proof: string[];
          }[];
          consistency?: {
            from: number;
            to: number;
            proof: string[];
          };
          /** The request's head as committed at tree size `since` (else the checkpoint's): the heads leaf ending that tree, its inclusion proof there, the request's bucket of the map whole and the bucket's path to the map root (docs/audit.md, the heads map); absent when that tree does not end with a heads leaf */
          heads?: {
            treeSize: number;
            leafIndex: number;
            leaf: string;
            proof: string[];
            bucket: number;
            entries: string[];
            path: string[];
          };
          /** The request's tombstones after `heads`, with their inclusion proofs in the checkpoint */
          tombstones?: {
            leafIndex: number;
            body: string;
            signature: string;
            proof: string[];
          }[];
          exportedAt: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/heads": {
    /**
     * Every request's recorded chain head
     *
     * Requests by id after `after` (keyset pages); `headSeq` is −1 and `headHash` null for a request without entries. `nextCursor` is null on the last page.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        after?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          requests: {
            requestId: string;
            headSeq: number;
            headHash: string | null;
          }[];
          nextCursor: string | null;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/inclusion": {
    /**
     * An inclusion proof (RFC 9162 §2.1.3) of an audit entry
     *
     * The audit path of the leaf of an audit entry in the tree of `treeSize` leaves (default: the latest checkpoint's). The leaf hash is SHA-256(0x00 || its 32-byte hash).
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        entryId: string;
        treeSize?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          entryId: string;
          leafIndex: number;
          leafHash: string;
          treeSize: number;
          proof: string[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/leaves": {
    /**
     * The audit log's leaves from an index, in order, with their entries
     *
     * An index range of the log (at most `limit`), each leaf with its request, its entry as the canonical text its hash is computed over (null when the entry row is gone) and, for a tombstone leaf (chains deleted), its signed body. A leaf without a request and tombstone logs an administrative change (but a key-rotation leaf, which `GET /api/audit/public-key` lists as a key's certificate): `change` is its row's canonical text (null when the row is gone), whose SHA-256 is the leaf's data. `treeSize` is the log's size now.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from?: number;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          treeSize: number;
          leaves: {
            index: number;
            leafHash: string;
            requestId: string | null;
            entryId: string | null;
            entry: string | null;
            /** What the leaf logs, as stored with it: `entry`, `tombstone`, `key-rotation`, `change`, or another record the service logs */
            kind: string | null;
            tombstone: {
              body: string;
              signature: string;
            } | null;
            /** On a change leaf: the change row as canonical JSON; null when the row is gone */
            change?: string | null;
            /** On a heads leaf (the last leaf of a checkpoint's tree): its data, the map of heads' root it commits */
            heads?: string;
            /** The credential recorded as the entry's writer, where the service records one (null: not recorded) */
            writtenBy?: string | null;
          }[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/public-key": {
    /**
     * The audit log's checkpoint signing keys
     *
     * `keyId`, `publicKey` and `publicKeyPem` are the current key; `keys` lists every key that has signed checkpoints, current one included. A listed key proves nothing by itself (anyone who writes the database can add one): verifiers trust a pinned key and the keys certified by one (docs/audit.md).
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          algorithm: "Ed25519";
          /** The log name the signatures cover */
          log: string;
          keyId: string;
          /** Base64 of the raw 32-byte public key */
          publicKey: string;
          publicKeyPem: string;
          keys: {
            keyId: string;
            publicKey: string;
            createdAt: number;
            /** The certificate of this key by the key it replaced (AUDIT_PREVIOUS_SIGNING_KEY); null for a key no previous key certified */
            certificate: {
              /** The key-rotation leaf whose data `body` is */
              leafIndex: number;
              /** Canonical JSON {v: 1, kind: "key-rotation", log, keyId, publicKey, previousKeyId, timestamp} */
              body: string;
              /** Base64 Ed25519 signature over `body` by the previous key (`previousKeyId`) */
              signature: string;
            } | null;
          }[];
          /** The origin line of the C2SP checkpoint notes (GET /api/audit/tlog/checkpoint) */
          origin: string;
          /** The current key as a signed-note verifier key, `<key name>+<key hash>+<base64(0x01 || key)>`: what C2SP clients and witnesses are configured with */
          noteVerifierKey: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/requests": {
    /**
     * Every request’s stored fields that its audit chain commits to, by id (for `vigil verify`)
     *
     * Each request as its row holds it: the fields its audit entries set (status, decidedBy, decidedAt, decisionReason, confirmedAt, executionResult as canonical JSON text), its action and createdAt, and `requestHash`, the SHA-256 of its stored action, params, context, urgency, expiresAt and policy decision that its `created` entry must commit to (docs/audit.md). Answered as stored, tampered or not: `vigil verify` compares them with the logged entries. Keyset pages by id; `nextCursor` is null on the last page.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        after?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          requests: {
            requestId: string;
            /** The last seq of its audit chain the row records */
            headSeq: number;
            action: string;
            createdAt: string;
            requestHash: string;
            status: string;
            decidedBy: string | null;
            decidedAt: string | null;
            decisionReason: string | null;
            confirmedAt: string | null;
            executionResult: string | null;
            /** `tier N until <deadline>` after an escalation, else null (docs/guide/escalation.md) */
            escalation: string | null;
            /** The erasure whose marker its params and context are (requestHash is then the marker's; the erasure's signed leaf lists the one its created entry committed to), else null (docs/guide/erasure.md) */
            erasedBy: string | null;
          }[];
          nextCursor: string | null;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/tlog/checkpoint": {
    /**
     * The latest checkpoint as a C2SP signed note, with its cosignatures
     *
     * text/plain: the tlog-checkpoint text (origin AUDIT_LOG_ORIGIN, by default `<log>/<keyId>`; tree size; base64 root hash), a blank line, the log's Ed25519 note signature (key name AUDIT_NOTE_KEY_NAME, by default the origin; its verifier key is `noteVerifierKey` of GET /api/audit/public-key), then every stored tlog-cosignature v1 line of the witnesses (docs/audit.md).
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: string;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/tlog/cosignatures": {
    /**
     * Store witnesses' cosignatures of a checkpoint note
     *
     * `note` is a checkpoint note the log signed (its text byte for byte, as GET /api/audit/tlog/checkpoint served it) with cosignature lines appended: every line but the log's own must be a valid tlog-cosignature v1 by a witness of AUDIT_COSIGNERS, else the whole note is refused (422) and nothing is stored.
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        note: string;
      };
      bodyRequired: true;
      responses: {
        200: {
          treeSize: number;
          /** Cosignatures not stored before */
          added: number;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        422: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/tlog/tile/{path}": {
    /**
     * A hash tile of the audit log (c2sp.org/tlog-tiles)
     *
     * The path after `tile/` is `<L>/<N>[.p/<W>]` as tlog-tiles spells it (N in 3-digit groups, all but the last prefixed with x). The body is the W (256 for a full tile) concatenated 32-byte hashes: at level 0 leaf hashes, at level L the roots of the subtrees of 256^L leaves. Tiles within the latest checkpoint only; entry bundles (`tile/entries/…`) are never served: the content of what is logged does not leave Vigil.
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        /** The rest of the path, its slashes included (each segment percent-encoded) */
        path: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: string;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/tombstones": {
    /**
     * The signed tombstones of a period (scopes the service removed from its log)
     *
     * Each tombstone leaf whose timestamp lies from `from` to `to` (inclusive), in log order: its leaf data (`body`, canonical JSON) and the audit key’s signature over those bytes (docs/audit.md).
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from: string;
        to: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          tombstones: {
            leafIndex: number;
            scopeId: string;
            body: string;
            signature: string;
          }[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/unlogged": {
    /**
     * Stored entries that have no leaf in the audit log
     *
     * Entries written outside the service's write path (every entry it stores gets its leaf in the same transaction). Paged by entry id; `nextCursor` is null on the last page. Scans the entries table.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          entries: {
            requestId: string;
            seq: number;
            entryId: string;
          }[];
          nextCursor: string | null;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/audit/unlogged-changes": {
    /**
     * Stored change-log rows that have no leaf in the audit log
     *
     * Administrative changes written outside the service (every change it records gets its leaf in the same transaction). Paged by change id; `nextCursor` is null on the last page. Scans the change log.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          changes: {
            changeId: string;
            resource: string;
            resourceId: string | null;
            action: string;
          }[];
          nextCursor: string | null;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/budgets": {
    /**
     * List budgets by name
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          budgets: Budget[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Create a budget
     *
     * Spend comes from observe (the figures of GET /api/analytics/costs), read every BUDGET_POLL_MS. Over `softUsd` a request that covers it is routed to a person (even if a policy or grant would approve it); over `hardUsd` it is denied and, with `pauseOnHard`, the agents that spent it are paused in observe. Policies read it as `budgets.<name>.spendUsd` and `budgets.<name>.level`. Recorded in the change log, as is every threshold crossed (action `breached`).
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        /** agent, session, tag or tenant */
        scope: "agent" | "session" | "tag" | "tenant";
        /** The agent, session or tag; null: each agent / each session (a tag budget needs its tag, a tenant budget takes none) */
        scopeValue?: string | null;
        /** UTC hour, day, calendar month, or each session */
        window: "session" | "hour" | "day" | "month";
        /** Above it, matching requests are routed to a person */
        softUsd?: number | null;
        /** Above it, matching requests are denied and (pauseOnHard) the agents paused in observe */
        hardUsd?: number | null;
        pauseOnHard?: boolean;
        enabled?: boolean;
      };
      bodyRequired: true;
      responses: {
        201: Budget;
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/budgets/{id}": {
    /**
     * A budget with its current window's spend figures and its breaches
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: BudgetDetail;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Update a budget (fields not given stay as they are)
     *
     * Scope: `admin`.
     */
    put: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        name?: string;
        /** agent, session, tag or tenant */
        scope?: "agent" | "session" | "tag" | "tenant";
        /** The agent, session or tag; null: each agent / each session (a tag budget needs its tag, a tenant budget takes none) */
        scopeValue?: string | null;
        /** UTC hour, day, calendar month, or each session */
        window?: "session" | "hour" | "day" | "month";
        /** Above it, matching requests are routed to a person */
        softUsd?: number | null;
        /** Above it, matching requests are denied and (pauseOnHard) the agents paused in observe */
        hardUsd?: number | null;
        pauseOnHard?: boolean;
        enabled?: boolean;
      };
      bodyRequired: true;
      responses: {
        200: Budget;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        413: GateError;
        414: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Delete a budget
     *
     * Scope: `admin`.
     */
    delete: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          id: string;
          deleted: true;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/claude-code/permission-prompt": {
    /**
     * Claude Code --permission-prompt-tool: answers {behavior: allow, updatedInput} or {behavior: deny, message}
     *
     * What the MCP tool `claude_code_permission_prompt` of POST /mcp calls. The tool call becomes an approval request (as for the hook); the answer waits up to `wait` seconds (default `CLAUDE_CODE_PROMPT_WAIT_SECONDS`, 55) for a human. Allow carries exactly the approved input; denied, expired, still pending or any failure → deny with the reason.
     *
     * Scope: `request:create`.
     */
    post: {
      params: Record<string, never>;
      query: {
        /** Seconds to wait for a human when no policy decided at once (keep it below the hook’s or tool call’s timeout) */
        wait?: number;
        /** Seconds after which the request expires undecided (it is then denied) */
        expires?: number;
        urgency?: "low" | "normal" | "high" | "critical";
      };
      body: {
        tool_name: string;
        input: {
          [key: string]: unknown;
        };
        tool_use_id?: string;
        [key: string]: unknown;
      };
      bodyRequired: true;
      responses: {
        200: {
          behavior: "allow";
          updatedInput: {
            [key: string]: unknown;
          };
        } | {
          behavior: "deny";
          message: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/dashboard/sessions": {
    /**
     * Sign in to the dashboard: exchange an API key and a display name for a short-lived session token
     *
     * Authenticate with an API key (a session token cannot open another session). The token is in this response only; requests made with it have the key’s scopes and rate limit and are attributed `dashboard:<name>`. It expires 8 hours after sign-in.
     *
     * Scope: `any`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
      };
      bodyRequired: true;
      responses: {
        201: {
          id: string;
          name: string;
          actor: string;
          keyId: string;
          keyName: string;
          scopes: ("admin" | "request:create" | "request:read" | "request:decide" | "webhook:manage")[];
          rateLimit: number | null;
          createdAt: string;
          expiresAt: string;
          token: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/dashboard/sessions/current": {
    /**
     * Who the credential of this request is: its actor, key, scopes and (for a session token) expiry
     *
     * Any valid key or session token.
     *
     * Scope: `any`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          kind: "api_key" | "dashboard_session" | "mcp_session";
          actor: string;
          keyId: string;
          keyName: string;
          scopes: ("admin" | "request:create" | "request:read" | "request:decide" | "webhook:manage")[];
          rateLimit: number | null;
          session: {
            id: string;
            name: string;
            createdAt: string;
            expiresAt: string;
          } | null;
        };
        400: GateError;
        401: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Sign out: revoke the dashboard session token this request carries
     *
     * Scope: `any`.
     */
    delete: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          id: string;
          revoked: true;
        };
        400: GateError;
        401: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/delegations": {
    /**
     * List delegations, latest start first (at most 500)
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          delegations: Delegation[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Lend a decider's authority to another for a time window (out of office)
     *
     * While active, the delegate may decide from chat wherever the delegator may, and votes for the delegator in a quorum whose groups admit the delegator (docs/guide/approvers.md).
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        delegator: string;
        delegate: string;
        /** Default: now */
        startsAt?: string;
        endsAt: string;
        reason?: string | null;
      };
      bodyRequired: true;
      responses: {
        201: Delegation;
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/delegations/{id}": {
    /**
     * Revoke a delegation (it stays listed, with revokedAt)
     *
     * Scope: `admin`.
     */
    delete: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Delegation;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/erasures/{id}": {
    /**
     * An erasure's signed deletion receipt, again
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: GateErasureReceipt;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/grants": {
    /**
     * List grants, newest first
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** Only grants that can still be used */
        active?: "true" | "false";
        action?: string;
        limit?: number;
        offset?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          grants: Grant[];
          total: number;
          hasMore: boolean;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Grant an action to an agent or session for a while and/or a number of uses
     *
     * Later requests of the action whose context names the agent (`agentId`) and/or session (`sessionId`) and that a policy routes for a decision (route_to_human or route_to_agent; never ones a policy denies) are approved by the grant: `decidedBy` and the receipt name `grant:<id>`, and the approving audit entry names the grant. Each use is taken in the request's transaction, so a grant of N uses approves exactly N requests however many arrive at once. Needs an agent or session, and `durationSeconds`, `maxUses` or both. Recorded in the change log.
     *
     * Scope: `request:decide`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        /** The action granted; taken from `requestId` when omitted */
        action?: string;
        /** The agent granted (the requests' `context.agentId`) */
        agentId?: string;
        /** The session granted (the requests' `context.sessionId`) */
        sessionId?: string;
        /** A request to grant from: its action and, unless agentId or sessionId is given, its context's agentId and sessionId */
        requestId?: string;
        /** How long the grant lasts from now (at most 30 days) */
        durationSeconds?: number;
        /** How many requests it approves at most */
        maxUses?: number;
        note?: string;
      };
      bodyRequired: true;
      responses: {
        201: Grant;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/grants/{id}": {
    /**
     * A grant with its uses
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: GrantDetail;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/grants/{id}/revoke": {
    /**
     * Revoke a grant: no request is approved by it any more
     *
     * A use being taken at the same moment either commits first (its request is approved) or finds the grant revoked. Recorded in the change log.
     *
     * Scope: `request:decide`.
     */
    post: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Grant;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        413: GateError;
        414: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/hooks/claude-code": {
    /**
     * Claude Code HTTP hook (PreToolUse, PermissionRequest): each tool call becomes an approval request the policies decide
     *
     * Configure it as an `http` hook in `.claude/settings.json` (docs/guide/claude-code.md). The request’s action is the tool’s name, its params the tool input, its context `{via: "claude-code", claudeCode: {sessionId, toolUseId, cwd}}`. Approved → allow; denied, expired or any failure → deny with the reason; still pending after `wait` seconds → `pending` (PreToolUse: ask, defer or deny; PermissionRequest: deny, or no decision so Claude Code asks its user).
     *
     * Scope: `request:create`.
     */
    post: {
      params: Record<string, never>;
      query: {
        /** Seconds to wait for a human when no policy decided at once (keep it below the hook’s or tool call’s timeout) */
        wait?: number;
        /** Seconds after which the request expires undecided (it is then denied) */
        expires?: number;
        urgency?: "low" | "normal" | "high" | "critical";
        /** The answer while a human has not decided: ask (interactive), defer (claude -p), deny */
        pending?: "ask" | "defer" | "deny";
      };
      body: {
        hook_event_name: "PreToolUse" | "PermissionRequest";
        session_id: string;
        tool_name: string;
        tool_input: {
          [key: string]: unknown;
        };
        tool_use_id?: string;
        cwd?: string;
        agent_id?: string;
        [key: string]: unknown;
      };
      bodyRequired: true;
      responses: {
        200: {
          /** Absent for a PermissionRequest still pending (with pending=ask or defer): Claude Code then asks its user as usual */
          hookSpecificOutput?: {
            hookEventName: "PreToolUse";
            permissionDecision: "allow" | "deny" | "ask" | "defer";
            permissionDecisionReason: string;
          } | {
            hookEventName: "PermissionRequest";
            decision: {
              behavior: "allow";
              updatedInput: {
                [key: string]: unknown;
              };
            } | {
              behavior: "deny";
              message: string;
            };
          };
          systemMessage?: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/mcp/authorize": {
    /**
     * May the calling key run this MCP tool? Answers allow or deny (with the reason) from the key’s scopes
     *
     * Called by AgentGate’s MCP server before each tool. `params` and `context` (the tool’s arguments) are accepted and not used: the verdict depends on the tool and the scopes of the key (or of the session’s key) only. An unknown tool is a deny, not an error.
     *
     * Scope: `any`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        toolName: string;
        params?: {
          [key: string]: unknown;
        };
        context?: {
          [key: string]: unknown;
        };
      };
      bodyRequired: true;
      responses: {
        200: McpToolVerdict;
        400: GateError;
        401: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/mcp/sessions": {
    /**
     * Sign an MCP client in: exchange an API key and the client name for a short-lived token attributed mcp:<name>
     *
     * Authenticate with an API key (a session token cannot open another session). The token is in this response only; requests made with it have the key’s scopes and rate limit and are attributed `mcp:<name>`. It expires 8 hours after sign-in.
     *
     * Scope: `any`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
      };
      bodyRequired: true;
      responses: {
        201: {
          id: string;
          name: string;
          actor: string;
          keyId: string;
          keyName: string;
          scopes: ("admin" | "request:create" | "request:read" | "request:decide" | "webhook:manage")[];
          rateLimit: number | null;
          createdAt: string;
          expiresAt: string;
          token: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/policies": {
    /**
     * List policies in evaluation order
     *
     * In evaluation order: priority, then id.
     *
     * Scope: `admin`.
     */
    get: {
      params: Record<string, never>;
      query: {
        limit?: number;
        offset?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          policies: Policy[];
          pagination: {
            total: number;
            limit: number;
            offset: number;
            hasMore: boolean;
          };
          /** Stored policies the engine does not apply: their row is not as their last logged change left it (edited or inserted in the database) */
          refused: {
            id: string;
            name: string;
            reason: string;
          }[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Create a policy
     *
     * A rule's `match` maps paths (`action`, `params.amount`, or just `amount`) to an exact value or an operator object (`$lt`, `$gt`, `$lte`, `$gte`, `$in`, `$regex`); several operators must all hold, and a path that does not exist never matches. A `$regex` prone to catastrophic backtracking is a 400.
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        priority?: number;
        enabled?: boolean;
        rules: {
          match: {
            [key: string]: string | number | boolean | null | {
              $lt?: number;
              $gt?: number;
              $lte?: number;
              $gte?: number;
              $in?: (string | number)[];
              $regex?: string;
            };
          };
          decision: "auto_approve" | "auto_deny" | "route_to_human" | "route_to_agent";
          approvers?: string[];
          channels?: string[];
          requireReason?: boolean;
          onDeadline?: {
            escalate?: {
              approvers?: string[];
              channels?: string[];
              timeoutSeconds: number;
            }[];
            reason?: string;
            remindBeforeSeconds?: number;
          };
          quorum?: {
            approvals: number;
            denials?: number;
            groups?: string[];
          };
        }[];
      };
      bodyRequired: true;
      responses: {
        201: Policy;
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/policies/simulate": {
    /**
     * Try a request against the policies without creating it (nothing is stored, no webhook is sent)
     *
     * Evaluates the request with the same engine as POST /api/requests against the stored policies as they are now (enabled ones, by priority) and, when given, an unsaved `candidate` policy. `status` is what the request would get: approved (auto_approve), denied (auto_deny) or pending (route_to_human, route_to_agent, or no rule matched).
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        action: string;
        params?: {
          [key: string]: unknown;
        };
        context?: {
          [key: string]: unknown;
        };
        urgency?: "low" | "normal" | "high" | "critical";
        /** An unsaved policy evaluated as if saved: with the id of a stored policy it stands in for that policy, else it is added */
        candidate?: {
          name: string;
          priority?: number;
          enabled?: boolean;
          rules: {
            match: {
              [key: string]: string | number | boolean | null | {
                $lt?: number;
                $gt?: number;
                $lte?: number;
                $gte?: number;
                $in?: (string | number)[];
                $regex?: string;
              };
            };
            decision: "auto_approve" | "auto_deny" | "route_to_human" | "route_to_agent";
            approvers?: string[];
            channels?: string[];
            requireReason?: boolean;
            onDeadline?: {
              escalate?: {
                approvers?: string[];
                channels?: string[];
                timeoutSeconds: number;
              }[];
              reason?: string;
              remindBeforeSeconds?: number;
            };
            quorum?: {
              approvals: number;
              denials?: number;
              groups?: string[];
            };
          }[];
          id?: string;
        };
      };
      bodyRequired: true;
      responses: {
        200: {
          decision: {
            decision: "auto_approve" | "auto_deny" | "route_to_human" | "route_to_agent";
            policyId: string | null;
            policyName: string | null;
            ruleIndex: number | null;
            approvers: string[];
            channels: string[];
            requireReason: boolean;
            /** For a routed request: what its deadline does (docs/guide/escalation.md); the rule's, else the default */
            onDeadline?: {
              escalate: {
                approvers: string[];
                channels: string[];
                timeoutSeconds: number;
              }[];
              reason?: string;
              remindBeforeSeconds: number;
            };
            /** For a request routed to a human whose rule needs several approvals (docs/guide/approvers.md) */
            quorum?: {
              approvals: number;
              denials: number;
              groups: string[];
            };
          };
          status: "approved" | "denied" | "pending";
          matchedRule: {
            match: {
              [key: string]: string | number | boolean | null | {
                $lt?: number;
                $gt?: number;
                $lte?: number;
                $gte?: number;
                $in?: (string | number)[];
                $regex?: string;
              };
            };
            decision: "auto_approve" | "auto_deny" | "route_to_human" | "route_to_agent";
            approvers?: string[];
            channels?: string[];
            requireReason?: boolean;
            onDeadline?: {
              escalate: {
                approvers: string[];
                channels: string[];
                timeoutSeconds: number;
              }[];
              reason?: string;
              remindBeforeSeconds: number;
            };
            quorum?: {
              approvals: number;
              denials: number;
              groups: string[];
            };
          } | null;
          candidateMatched: boolean;
          policiesEvaluated: number;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/policies/{id}": {
    /**
     * Update a policy (fields not given stay as they are)
     *
     * Scope: `admin`.
     */
    put: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        name?: string;
        priority?: number;
        enabled?: boolean;
        rules?: {
          match: {
            [key: string]: string | number | boolean | null | {
              $lt?: number;
              $gt?: number;
              $lte?: number;
              $gte?: number;
              $in?: (string | number)[];
              $regex?: string;
            };
          };
          decision: "auto_approve" | "auto_deny" | "route_to_human" | "route_to_agent";
          approvers?: string[];
          channels?: string[];
          requireReason?: boolean;
          onDeadline?: {
            escalate?: {
              approvers?: string[];
              channels?: string[];
              timeoutSeconds: number;
            }[];
            reason?: string;
            remindBeforeSeconds?: number;
          };
          quorum?: {
            approvals: number;
            denials?: number;
            groups?: string[];
          };
        }[];
      };
      bodyRequired: true;
      responses: {
        200: Policy;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        413: GateError;
        414: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Delete a policy
     *
     * Scope: `admin`.
     */
    delete: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          id: string;
          deleted: true;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/receipts/redeem": {
    /**
     * Redeem an approval receipt for the action and params about to run (once)
     *
     * Checks the signature (401 when it is not one of the gate’s keys’), the expiry (410), that `action` and the digest of `params` are the receipt's (422), then records the redemption in the request's audit chain, naming the redeeming key: 200 the first time, 409 after (also after a redemption at issue: POST /api/requests with `redeem: true`). A malformed receipt is a 400.
     *
     * Scope: `request:create`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        receipt: unknown;
        action: string;
        params: {
          [key: string]: unknown;
        };
      };
      bodyRequired: true;
      responses: {
        200: ReceiptRedemption;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        410: GateError;
        413: GateError;
        415: GateError;
        422: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/requests": {
    /**
     * List requests, newest first
     *
     * `agentId` comes from the request's context; `policyName` is the routing policy's current name, null when no rule matched or it was deleted. Filters (optional, combined with AND): `status`, `action`, `urgency`, `agentId` (the context’s), and `from`/`to` (ISO 8601, inclusive) on the creation time — what an evidence pack of a period and its agents reads, each from an index.
     *
     * Scope: `request:read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        status?: "pending" | "approved" | "denied" | "expired";
        action?: string;
        urgency?: "low" | "normal" | "high" | "critical";
        agentId?: string;
        from?: string;
        to?: string;
        limit?: number;
        offset?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          id: string;
          action: string;
          status: "pending" | "approved" | "denied" | "expired";
          urgency: "low" | "normal" | "high" | "critical";
          createdAt: string;
          /** context.agentId, when the request gave one */
          agentId: string | null;
          params: {
            [key: string]: unknown;
          };
          /** The policy whose rule routed the request; null when no rule matched */
          policyId: string | null;
          /** That policy’s current name; null when no rule matched or the policy was deleted since */
          policyName: string | null;
        }[];
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Ask for approval of an action; the policy engine may decide at once
     *
     * The answer carries the policy engine's `policyDecision`: `auto_approve` / `auto_deny` decide at once, `route_to_human` and `route_to_agent` leave the request pending. With `redeem: true` (an agent about to run the action itself), an approval at once also redeems its receipt for this credential, recorded in the request's audit chain as POST /api/receipts/redeem records it (`redemption`; a later redeem of it is a 409).
     *
     * Scope: `request:create`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        action: string;
        params?: {
          [key: string]: unknown;
        };
        context?: {
          [key: string]: unknown;
        };
        urgency?: "low" | "normal" | "high" | "critical";
        expiresAt?: string;
        /** Redeem the receipt at once if a policy approves at once (docs/guide/receipts.md) */
        redeem?: boolean;
      };
      bodyRequired: true;
      responses: {
        201: CreatedApprovalRequest;
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/requests/{id}": {
    /**
     * One request
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: ApprovalRequest;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/requests/{id}/audit": {
    /**
     * The audit trail of a request, oldest first; each entry names its actor and the API key behind it
     *
     * Each entry carries its link in the request’s hash chain (`seq`, `prevHash`, `hash`; recipe in docs/audit.md) and `chainValid`: whether it and every entry before it verify. GET /api/requests/:id/audit/verify gives the whole verdict.
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: AuditEntry[];
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/requests/{id}/audit/verify": {
    /**
     * Verify the hash chain of a request’s audit trail against the head the request records
     *
     * Checks each entry against its leaf in the audit log too; `brokenAt` is the first failing `seq` (null when valid).
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: AuditChainVerdict;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/requests/{id}/budgets": {
    /**
     * The budgets covering a request now, with their current window's spend
     *
     * What a new request with this context would be assessed against at this moment (the dashboard shows it beside a pending request); the budget that routed or denied it at its creation is in its `created` audit entry (`details.budget`).
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: RequestBudgets;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/requests/{id}/confirm": {
    /**
     * Confirm execution of an approved action (once); the status stays approved
     *
     * 409 unless approved and not yet confirmed. Records `confirmedAt` and `executionResult`.
     *
     * Scope: `request:create`.
     */
    post: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        result: {
          [key: string]: unknown;
        };
      };
      bodyRequired: true;
      responses: {
        200: {
          id: string;
          status: "pending" | "approved" | "denied" | "expired";
          confirmedAt: string;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        413: GateError;
        414: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/requests/{id}/decide": {
    /**
     * Approve or deny a pending request; decidedBy is derived from the credential (api:<key name> or dashboard:<session name>)
     *
     * A `decidedBy` in the body is ignored. 409 when the request is no longer pending (decided or expired); 400 without the reason the matching rule requires. When the rule needs several approvals, a vote that does not settle the request answers 202 with the progress; 409 for a second vote of the same decider, 403 for one outside the quorum’s groups.
     *
     * Scope: `request:decide`.
     */
    post: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        decision: "approved" | "denied";
        reason?: string;
        /** Ignored: decidedBy is derived from the credential */
        decidedBy?: string | null;
      };
      bodyRequired: true;
      responses: {
        200: {
          id: string;
          status: "pending" | "approved" | "denied" | "expired";
          decidedBy: string;
          decidedAt: string;
          /** The approval receipt when approved, else null */
          receipt: ApprovalReceipt | null;
        };
        202: {
          id: string;
          status: "pending";
          approvals: {
            required: number;
            denialsRequired: number;
            approvedBy: string[];
            deniedBy: string[];
          };
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        413: GateError;
        414: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/requests/{id}/receipt": {
    /**
     * The approval receipt of an approved request
     *
     * Ed25519 over the RFC 8785 canonical JSON of the receipt's other fields, with the audit log's signing key (`keyId`; GET /api/audit/public-key). The same receipt on every read until the key rotates; 404 when the request is not approved (docs/guide/receipts.md).
     *
     * Scope: `request:read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: ApprovalReceipt;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/subjects/{id}": {
    /**
     * Erase a data subject: every request naming it keeps its id, status, times and audit chain while its content becomes an erasure marker, under one signed erasure leaf
     *
     * Replaces the params, context, decision reason and execution result of every request naming the subject, and the details of its decision, vote, confirmation and redemption entries, by the erasure marker; deletes their webhook deliveries; answers a signed deletion receipt (docs/guide/erasure.md). A request of the subject still pending answers 409 and erases nothing.
     *
     * Scope: `admin`.
     */
    delete: {
      params: {
        /** The data subject's id, as requests name it (GATE_SUBJECT_PATHS) */
        id: string;
      };
      query: Record<string, never>;
      body: {
        /** Why the subject is erased (e.g. "GDPR Art. 17 request 2026-0142"); recorded in the signed leaf */
        reason: string;
      };
      bodyRequired: true;
      responses: {
        200: GateErasureReceipt;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        409: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/webhooks": {
    /**
     * List webhooks
     *
     * Scope: `webhook:manage`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          webhooks: Webhook[];
        };
        400: GateError;
        401: GateError;
        403: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Register a webhook; with a secret, deliveries are signed (X-Gate-Signature)
     *
     * Scope: `webhook:manage`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        url: string;
        events: ("request.created" | "request.decided" | "request.expired" | "request.confirmed" | "request.redeemed" | "request.escalated" | "request.reminder" | "request.voted")[];
        secret?: string;
      };
      bodyRequired: true;
      responses: {
        201: Webhook;
        400: GateError;
        401: GateError;
        403: GateError;
        413: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/webhooks/{id}": {
    /**
     * Delete a webhook (its pending deliveries are dropped)
     *
     * Its pending deliveries are marked failed, never sent.
     *
     * Scope: `webhook:manage`.
     */
    delete: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          id: string;
          deleted: true;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
    /**
     * Change a webhook’s events, enabled flag, URL or secret
     *
     * Scope: `webhook:manage`.
     */
    patch: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        events?: ("request.created" | "request.decided" | "request.expired" | "request.confirmed" | "request.redeemed" | "request.escalated" | "request.reminder" | "request.voted")[];
        enabled?: boolean;
        url?: string;
        secret?: string | null;
      };
      bodyRequired: true;
      responses: {
        200: Webhook;
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        413: GateError;
        414: GateError;
        415: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/api/webhooks/{id}/deliveries": {
    /**
     * Deliveries of a webhook, newest first, with their status and last error
     *
     * Scope: `webhook:manage`.
     */
    get: {
      params: {
        id: string;
      };
      query: {
        limit?: number;
        offset?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          deliveries: {
            id: string;
            event: string;
            status: "pending" | "delivered" | "failed";
            attempts: number;
            responseStatus: number | null;
            lastError: string | null;
            nextAttemptAt: string | null;
            createdAt: string;
            deliveredAt: string | null;
          }[];
          total: number;
          hasMore: boolean;
        };
        400: GateError;
        401: GateError;
        403: GateError;
        404: GateError;
        414: GateError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
  "/health": {
    /**
     * Health; with ?deep=true also the database (a real query) and Redis (PING) when configured
     *
     * Deep: the database (a real query) and Redis (PING) each `ok` or `error`; 503 when one fails.
     */
    get: {
      params: Record<string, never>;
      query: {
        deep?: "true" | "false";
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          status: "ok";
          timestamp: string;
          checks?: {
            database: "ok" | "error";
            redis?: "ok" | "error";
          };
        };
        400: GateError;
        500: GateError;
        503: {
          status: "degraded";
          timestamp: string;
          checks: {
            database: "ok" | "error";
            redis?: "ok" | "error";
          };
        };
      };
    };
  };
  "/mcp": {
    /**
     * MCP over Streamable HTTP (stateless): the service’s tools, each needing the scope of the route it calls
     *
     * One JSON-RPC message per POST, answered with JSON (the `Accept` header must list JSON and SSE, else 406). Protocol 2026-07-28: each request carries its version and client in `_meta` and the `MCP-Protocol-Version`, `Mcp-Method` (and `Mcp-Name`) headers, with no handshake (`server/discover`, `tools/list`, `tools/call`). Protocol 2025-11-25 down to 2024-11-05, as the client asks in `initialize` (then `tools/list`, `tools/call`, `ping`, `logging/setLevel`, notifications). Stateless: any instance answers any request. A tool runs its route with the request’s key, so the key needs that route’s scope; a refused call is a tool result with `isError: true` and the route’s answer. A malformed body is a JSON-RPC error (400), never a 500. docs/guide/mcp.md.
     *
     * Scope: `any`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {};
      bodyRequired: true;
      responses: {
        200: unknown;
        202: unknown;
        400: JsonRpcError;
        401: GateError;
        403: JsonRpcError;
        406: JsonRpcError;
        413: GateError;
        415: JsonRpcError;
        429: GateError;
        500: GateError;
        503: GateError;
      };
    };
  };
}
