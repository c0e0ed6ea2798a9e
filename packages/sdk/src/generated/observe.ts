// Generated from the observe service's OpenAPI document (GET /api/openapi.json) by
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

export type Agent = {
  id: string;
  name: string;
  firstSeenAt: string;
  lastSeenAt: string;
  sessionCount: number;
  pausedAt: string | null;
  pauseReason: string | null;
  modelOverride: string | null;
  approvalPolicyId: string | null;
};

export type AgentHealth = {
  agentId: string;
  /** 0 to 100, weighted sum of the dimension scores */
  overallScore: number;
  trend: "improving" | "stable" | "degrading";
  /** Point change of overallScore from the previous window of the same length */
  trendDelta: number;
  dimensions: {
    name: "error_rate" | "cost_efficiency" | "tool_success" | "latency" | "completion_rate";
    /** 0 to 100 */
    score: number;
    /** 0 to 1 */
    weight: number;
    /** The measured value behind the score: share, USD, ratio, ms, share */
    rawValue: number;
    description: string;
  }[];
  window: {
    from: string;
    to: string;
  };
  sessionCount: number;
  computedAt: string;
};

export type AlertHistoryEntry = {
  id: string;
  ruleId: string;
  triggeredAt: string;
  resolvedAt?: string;
  currentValue: number;
  threshold: number;
  notified: boolean;
};

export type AlertRule = {
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  condition: "error_rate_exceeds" | "cost_exceeds" | "latency_exceeds" | "event_count_exceeds" | "no_events_for";
  threshold: number;
  windowMinutes: number;
  scope: {
    agentId?: string;
    tags?: string[];
  };
  notifyChannels: string[];
  createdAt: string;
  updatedAt: string;
};

export type AlertScopeInput = {
  agentId?: string;
  tags?: string[];
};

export type ApiKey = {
  id: string;
  name: string;
  prefix: string;
  scopes: ("ingest" | "read" | "admin")[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};

export type Benchmark = {
  id: string;
  name: string;
  description: string | null;
  agentId: string | null;
  status: "draft" | "running" | "completed" | "cancelled";
  variants: {
    id: string;
    name: string;
    tag: string;
    description: string | null;
    agentId: string | null;
    sessionCount: number;
  }[];
  metrics: ("error_rate" | "avg_cost" | "avg_latency" | "tool_success_rate" | "completion_rate" | "avg_tokens" | "avg_duration")[];
  minSessionsPerVariant: number;
  timeRange: {
    from: string | null;
    to: string | null;
  } | null;
  createdAt: string;
  updatedAt: string;
};

export type BenchmarkListItem = {
  id: string;
  name: string;
  description: string | null;
  status: "draft" | "running" | "completed" | "cancelled";
  agentId: string | null;
  metrics: ("error_rate" | "avg_cost" | "avg_latency" | "tool_success_rate" | "completion_rate" | "avg_tokens" | "avg_duration")[];
  variants: {
    id: string;
    name: string;
    tag: string;
  }[];
  createdAt: string;
  updatedAt: string;
};

export type BenchmarkResults = {
  benchmarkId: string;
  tenantId: string;
  status: "draft" | "running" | "completed" | "cancelled";
  minSessionsPerVariant: number;
  belowMinimum: boolean;
  variants: {
    variantId: string;
    variantName: string;
    tag: string;
    sessionCount: number;
    belowMinimum: boolean;
    metrics: {
      [key: string]: {
        mean: number | null;
        median: number | null;
        stddev: number | null;
        min: number | null;
        max: number | null;
        count: number;
      };
    };
    distributions?: {
      [key: string]: number[];
    };
  }[];
  comparisons: {
    metric: "error_rate" | "avg_cost" | "avg_latency" | "tool_success_rate" | "completion_rate" | "avg_tokens" | "avg_duration";
    variantA: {
      id: string;
      name: string;
      stats: {
        mean: number | null;
        median: number | null;
        stddev: number | null;
        min: number | null;
        max: number | null;
        count: number;
        rate?: number | null;
        numerator?: number;
        denominator?: number;
      };
    };
    variantB: {
      id: string;
      name: string;
      stats: {
        mean: number | null;
        median: number | null;
        stddev: number | null;
        min: number | null;
        max: number | null;
        count: number;
        rate?: number | null;
        numerator?: number;
        denominator?: number;
      };
    };
    absoluteDiff: number | null;
    percentDiff: number | null;
    testType: "welch_t" | "chi_squared";
    testStatistic: number | null;
    pValue: number;
    confidenceInterval: {
      lower: number;
      upper: number;
    } | null;
    effectSize: number | null;
    significant: boolean;
    winner?: string;
    confidence: "***" | "**" | "*" | "-";
    belowMinimum: boolean;
    degenerate: "insufficient_data" | "zero_variance" | "no_variation" | null;
  }[];
  summary: string;
  computedAt: string;
};

export type ComplianceResult = {
  sessionId: string;
  method: "deterministic";
  score: number;
  passed: boolean;
  reasoning: string;
  violations: {
    ruleId: string;
    ruleType: string;
    detail: string;
  }[];
  rulesEvaluated: number;
  event: {
    id: string;
    hash: string;
    prevHash: string | null;
  };
};

export type Config = {
  /** Sessions whose last event is older are deleted whole; 0 keeps everything */
  retentionDays: number;
  approvalGateSecretSet: boolean;
  formServiceSecretSet: boolean;
  authDisabled: boolean;
  memoryEnabled: boolean;
};

export type ContextLesson = {
  id: string;
  title: string;
  content: string;
  category: string;
  importance: number;
  relevanceScore: number;
};

export type ContextSession = {
  sessionId: string;
  agentId: string;
  startedAt: string;
  endedAt?: string;
  summary: string;
  relevanceScore: number;
  keyEvents: {
    id: string;
    eventType: string;
    summary: string;
    timestamp: string;
  }[];
};

export type Dataset = {
  id: string;
  name: string;
  caseCount: number;
  createdAt: string;
  cases: {
    id: string;
    index: number;
    input: unknown;
    expected: unknown;
  }[];
};

export type ErasureReceipt = {
  erasureId: string;
  /** HMAC-SHA256 of the subject's id under the service's subject key (SUBJECT_HASH_KEY): the raw id is not kept */
  subject: string;
  reason: string;
  /** Who asked: the API key, as the change log names it */
  requestedBy: string;
  erasedAt: string;
  eventCount: number;
  sessionIds: string[];
  /** Verify offline with `vigil verify erasure-receipt FILE --public-key KEY` */
  leaf: {
    /** The erasure leaf's index in the audit log (prove it included with GET /api/audit/proof/... of a checkpoint) */
    index: number;
    /** The leaf data: canonical JSON naming the subject, every erased event by id and chain hash, the reason, the requester, the time and the key */
    body: string;
    /** The audit key's Ed25519 signature over the UTF-8 bytes of body, base64 */
    signature: string;
    keyId: string;
    /** The raw Ed25519 public key, base64 */
    publicKey: string;
  };
};

export type ErrorDetail = {
  /** Dotted path of the offending field; empty for the whole body */
  path: string;
  message: string;
};

export type EvalRun = {
  id: string;
  datasetId: string;
  agentId: string;
  evaluatorId: string | null;
  status: "running" | "completed";
  totalCases: number;
  completedCases: number;
  passedCases: number;
  failedCases: number;
  createdAt: string;
  finishedAt: string | null;
  cases: {
    caseId: string;
    index: number;
    sessionId: string | null;
    passed: boolean | null;
    score: number | null;
    error: string | null;
    /** the output the agent's webhook answered (null when none) */
    actual: unknown;
    /** the evaluator's reasoning (null without an evaluator) */
    reasoning: string | null;
  }[];
};

export type EvalRunSummary = {
  id: string;
  datasetId: string;
  agentId: string;
  evaluatorId: string | null;
  status: "running" | "completed";
  totalCases: number;
  completedCases: number;
  passedCases: number;
  failedCases: number;
  createdAt: string;
  finishedAt: string | null;
};

export type Evaluator = {
  id: string;
  name: string;
  kind: "compliance" | "llm_judge";
  rules: {
    [key: string]: unknown;
  }[] | null;
  rubric: string | null;
  passThreshold: number | null;
  model: string | null;
  createdAt: string;
};

export type Event = {
  id: string;
  seq: number;
  timestamp: string;
  sessionId: string;
  agentId: string;
  eventType: string;
  severity: "debug" | "info" | "warn" | "error" | "critical";
  payload: {
    [key: string]: unknown;
  };
  metadata: {
    [key: string]: unknown;
  };
  prevHash: string | null;
  hash: string;
  /** The credential that wrote the event: `key:<API key id>`, `webhook:<source>` (a signed webhook), `service_token`, `server` or `none` (authentication disabled); null for events stored before it was recorded. Outside the chain hash, under the audit log (docs/audit.md#who-wrote-an-event). */
  writtenBy: string | null;
};

export type ExportTraceServiceResponse = {
  /** Set when some spans were refused; the others are stored */
  partialSuccess?: {
    /** int64 as a decimal string */
    rejectedSpans: string;
    errorMessage: string;
  };
};

export type GuardrailRule = {
  id: string;
  name: string;
  description: string | null;
  agentId: string | null;
  conditionType: "error_rate_threshold" | "cost_limit" | "health_score_threshold" | "custom_metric";
  conditionConfig: {
    [key: string]: unknown;
  };
  actionType: "pause_agent" | "notify_webhook" | "downgrade_model" | "approval_policy";
  actionConfig: {
    [key: string]: unknown;
  };
  cooldownMinutes: number;
  enabled: boolean;
  dryRun: boolean;
  triggerCount: number;
  lastTriggeredAt: string | null;
  createdAt: string;
  updatedAt: string;
};

export type GuardrailStatus = {
  ruleId: string;
  rule: GuardrailRule;
  enabled: boolean;
  dryRun: boolean;
  state: "disabled" | "ready" | "cooldown";
  cooldowns: {
    agentId: string;
    cooldownUntil: string;
  }[];
  triggerCount: number;
  lastTriggeredAt: string | null;
  recentTriggers: GuardrailTrigger[];
};

export type GuardrailTrigger = {
  id: string;
  ruleId: string;
  ruleName: string;
  agentId: string;
  triggeredAt: string;
  conditionType: "error_rate_threshold" | "cost_limit" | "health_score_threshold" | "custom_metric";
  currentValue: number;
  threshold: number;
  actionType: "pause_agent" | "notify_webhook" | "downgrade_model" | "approval_policy";
  dryRun: boolean;
  actionResult: {
    status: "applied" | "queued" | "dry_run";
    detail: string;
  };
};

export type HealthSnapshot = {
  agentId: string;
  /** YYYY-MM-DD (UTC) */
  date: string;
  overallScore: number;
  errorRateScore: number;
  costEfficiencyScore: number;
  toolSuccessScore: number;
  latencyScore: number;
  completionRateScore: number;
  sessionCount: number;
};

export type JsonRpcError = {
  jsonrpc: "2.0";
  error: {
    code: number;
    message: string;
  };
  id: string | number | null;
};

export type JudgeResult = {
  sessionId: string;
  method: "llm_judge";
  score: number;
  passed: boolean;
  reasoning: string;
  judgeModel: string;
  costUsd: number;
  tokenCount: number;
  event: {
    id: string;
    hash: string;
    prevHash: string | null;
  };
};

export type LegalHold = {
  id: string;
  /** What the hold covers: one session, every session of an agent, or every event of a data subject */
  scope: "session" | "agent" | "subject";
  /** The session or agent id; for a subject, the keyed hash of its id (the raw id is not stored) */
  targetId: string;
  reason: string;
  placedBy: string;
  placedAt: string;
  active: boolean;
  releasedAt: string | null;
  releasedBy: string | null;
  releaseReason: string | null;
};

export type LlmCall = {
  id: string;
  timestamp: string;
  sessionId: string;
  agentId: string;
  provider: string | null;
  model: string | null;
  status: "success" | "error";
  finishReason: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  totalTokens: number;
  costUsd: number | null;
  latencyMs: number | null;
};

export type LlmCallDetail = {
  id: string;
  timestamp: string;
  sessionId: string;
  agentId: string;
  provider: string | null;
  model: string | null;
  status: "success" | "error";
  finishReason: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  totalTokens: number;
  costUsd: number | null;
  latencyMs: number | null;
  /** erased: replaced by an erasure marker; sealed: its data key is destroyed. prompt and completion are then null */
  content: "readable" | "erased" | "sealed";
  erasureId: string | null;
  callId: string | null;
  /** the same for the llm_call event of the prompt; missing: no llm_call of that session and callId */
  promptContent: "readable" | "erased" | "sealed" | "missing";
  /** the llm_call event of the same session and callId; null when there is none or its content is not readable */
  prompt: {
    systemPrompt: string | null;
    messages: unknown[];
    eventId: string;
  } | null;
  completion: unknown;
  toolCalls: unknown[];
  /** the price table entry of the model (null when it has none) */
  price: LlmCallPrice | null;
};

export type LlmCallPrice = {
  provider: string;
  model: string;
  inputPerMillionUsd: number;
  outputPerMillionUsd: number;
  /** a pricing page's URL, or 'configuration' (MODEL_PRICES) */
  source: string;
  asOf: string;
  /** the call's tokens at this price (costUsd is what the agent recorded) */
  costAtPriceUsd: number;
};

export type ObserveError = {
  /** What went wrong, for a person to read */
  error: string;
  /** Stable and unique per error, for programs to branch on (docs/reference/errors.md) */
  code: "unauthorized" | "forbidden" | "route_not_found" | "payload_too_large" | "uri_too_long" | "internal" | "validation_error" | "invalid_json" | "request_timeout" | "unsupported_media_type" | "headers_too_large" | "unavailable" | "invalid_otlp" | "stream_token_invalid" | "invalid_signature" | "evidence_read_failed" | "checkpoint_not_found" | "audit_log_incomplete" | "audit_tree_size_invalid" | "audit_tile_not_found" | "audit_cosignature_invalid" | "event_not_found" | "llm_call_not_found" | "audit_item_not_found" | "session_not_found" | "agent_not_found" | "key_not_found" | "health_no_sessions" | "alert_rule_not_found" | "redaction_rule_not_found" | "legal_hold_not_found" | "erasure_not_found" | "subject_not_found" | "legal_hold" | "legal_hold_released" | "retention_below_floor" | "redaction_failed" | "redaction_field_reserved" | "guardrail_rule_not_found" | "limit_exceeded" | "benchmark_not_found" | "benchmark_draft" | "chain_broken" | "idempotency_in_flight" | "idempotency_key_reused" | "last_key" | "benchmark_status_conflict" | "service_token_invalid" | "evaluator_not_found" | "dataset_not_found" | "eval_run_not_found" | "unpriced_model" | "judge_failed" | "judge_not_configured" | "service_token_not_configured" | "lessons_removed" | "memory_disabled" | "storage_error" | "webhook_secret_not_configured" | "embedding_error" | "not_implemented" | "memory_unreachable" | "too_many_streams";
  /** The HTTP status, repeated */
  status: number;
  details?: ErrorDetail[];
};

export type OptimizeRecommendation = {
  currentModel: string;
  recommendedModel: string;
  complexityTier: "simple" | "moderate" | "complex";
  currentCostPerCall: number;
  recommendedCostPerCall: number;
  monthlySavings: number;
  callVolume: number;
  currentSuccessRate: number;
  recommendedSuccessRate: number;
  confidence: "low" | "medium" | "high";
  agentId: string;
};

export type RecallResult = {
  sourceType: "event" | "session";
  sourceId: string;
  score: number;
  text: string;
  metadata: {
    [key: string]: unknown;
  };
};

export type RedactionRule = {
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  kind: "path" | "regex";
  path: string | null;
  pattern: string | null;
  flags: string | null;
  label: string;
  createdAt: string;
  updatedAt: string;
};

export type ReflectInsight = {
  type: "error_pattern";
  summary: string;
  data: {
    pattern: string;
    count: number;
    firstSeen: string;
    lastSeen: string;
    affectedSessions: string[];
    precedingTools: string[][];
  };
  confidence: number;
} | {
  type: "tool_sequence";
  summary: string;
  data: {
    tools: string[];
    frequency: number;
    sessions: number;
    errorRate: number;
  };
  confidence: number;
} | {
  type: "cost_summary";
  summary: string;
  data: {
    totalCost: number;
    avgPerSession: number;
    totalSessions: number;
  };
  confidence: number;
} | {
  type: "model_cost";
  summary: string;
  data: {
    model: string;
    callCount: number;
    totalCost: number;
    avgCostPerCall: number;
  };
  confidence: number;
} | {
  type: "performance_stats";
  summary: string;
  data: {
    successRate: number;
    avgDuration: number;
    avgToolCalls: number;
    avgErrors: number;
  };
  confidence: number;
} | {
  type: "performance_assessment";
  summary: string;
  data: {
    assessment: "improving" | "stable" | "degrading";
  };
  confidence: number;
};

export type Session = {
  id: string;
  agentId: string;
  agentName: string;
  status: "active" | "completed" | "error";
  startedAt: string;
  endedAt?: string;
  lastEventAt: string;
  /** endedAt, else the last event before its first silence longer than SESSION_IDLE_TIMEOUT_MS, else lastEventAt; minus startedAt */
  durationMs: number;
  eventCount: number;
  toolCallCount: number;
  errorCount: number;
  totalCostUsd: number;
  tags: string[];
};

export type SessionStep = {
  id: string;
  seq: number;
  timestamp: string;
  eventType: string;
  severity: string;
  toolName: string | null;
  model: string | null;
  /** llm_response and cost_tracked: the spend recorded (the one definition of spend) */
  costUsd: number | null;
  /** llm_response: its latencyMs; tool_response and tool_error: the tool's durationMs */
  latencyMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  /** The one definition of an error event: severity error or critical, or a tool_error */
  isError: boolean;
};

export type TreeNode = {
  /** The id of the node's first event */
  id: string;
  name: string;
  kind: "llm" | "tool" | "agent" | "chain" | "retriever" | "embedding" | "other" | "event";
  status: "ok" | "error" | "open";
  startTime: string;
  endTime: string;
  durationMs: number;
  eventIds: string[];
  eventTypes: string[];
  span: {
    traceId: string;
    spanId: string;
    parentSpanId: string | null;
  } | null;
  model?: string;
  provider?: string;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  toolName?: string;
  error?: string;
  children: TreeNode[];
};

export type WebhookIngestBatchBodyInput = {
  source: "approval_gate" | "form_service";
  events: WebhookIngestBodyInput[];
};

export type WebhookIngestBodyInput = {
  source: "approval_gate" | "form_service" | "generic";
  event: string;
  data: {
    [key: string]: unknown;
  };
  timestamp?: string;
  context?: {
    /** Session the event joins (created if missing) */
    service_session_id?: string | null;
    /** Agent of the event; default the session agent, else `external` */
    service_agent_id?: string | null;
    [key: string]: unknown;
  };
};

export interface paths {
  "/api/agents": {
    /**
     * List agents, most recently seen first
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          agents: Agent[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/agents/{id}": {
    /**
     * Agent detail, including pause state and model override
     *
     * An agent reads its state (pause, model override, approval policy) here while it runs; `pausedAt`, `pauseReason`, `modelOverride` and `approvalPolicyId` are null when unset.
     *
     * Scope: `ingest` or `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Agent;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/agents/{id}/health": {
    /**
     * Health score of one agent over its sessions started in the window; saves the day’s snapshot on the first query
     *
     * 404 when the agent has no session in the window. How the five dimensions are scored: docs/api.md, *Health*.
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: {
        /** Window in days (1 to 90) */
        window?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: AgentHealth;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/agents/{id}/pause": {
    /**
     * Pause an agent by hand (it reads pausedAt from GET /api/agents/:id); an agent already paused keeps its first pause
     *
     * No body pauses with a default reason.
     *
     * Scope: `admin`.
     */
    post: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        reason?: string;
      } | null;
      bodyRequired: true;
      responses: {
        200: Agent;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/agents/{id}/resume": {
    /**
     * Clear a pause (and optionally the model override and the approval policy a guardrail set)
     *
     * No body is a plain resume.
     *
     * Scope: `admin`.
     */
    post: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        clearModelOverride?: boolean;
        clearApprovalPolicy?: boolean;
      } | null;
      bodyRequired: true;
      responses: {
        200: Agent;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/alerts/history": {
    /**
     * Alert history, newest first
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        ruleId?: string;
        from?: string;
        to?: string;
        limit?: number;
        offset?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          entries: AlertHistoryEntry[];
          total: number;
          hasMore: boolean;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/alerts/rules": {
    /**
     * List alert rules, newest first
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rules: AlertRule[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Create an alert rule
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        description?: string | null;
        enabled?: boolean;
        condition: "error_rate_exceeds" | "cost_exceeds" | "latency_exceeds" | "event_count_exceeds" | "no_events_for";
        threshold: number;
        windowMinutes: number;
        scope?: AlertScopeInput;
        notifyChannels?: string[];
      };
      bodyRequired: true;
      responses: {
        201: AlertRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/alerts/rules/{id}": {
    /**
     * One alert rule
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: AlertRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Change an alert rule; only the given fields change (scope is replaced as a whole); the rule GET answered is accepted, its read-only fields ignored
     *
     * Scope: `admin`.
     */
    put: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        /** Read-only: ignored */
        id?: string;
        /** Read-only: ignored */
        createdAt?: string;
        /** Read-only: ignored */
        updatedAt?: string;
        name?: string;
        description?: string | null;
        enabled?: boolean;
        condition?: "error_rate_exceeds" | "cost_exceeds" | "latency_exceeds" | "event_count_exceeds" | "no_events_for";
        threshold?: number;
        windowMinutes?: number;
        scope?: AlertScopeInput;
        notifyChannels?: string[];
      };
      bodyRequired: true;
      responses: {
        200: AlertRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Delete an alert rule; its history is kept and an open entry is resolved
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/analytics": {
    /**
     * Event counts, errors, tool latency and cost per time bucket; tool latency percentiles over the range
     *
     * `range` counts back from `to` and is not taken with `from`. `totals` also carries the tool duration percentiles over the range (null when none).
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from?: string;
        to?: string;
        range?: "1h" | "6h" | "24h" | "3d" | "7d" | "30d";
        agentId?: string;
        granularity?: "hour" | "day" | "week";
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          buckets: {
            eventCount: number;
            toolCallCount: number;
            errorCount: number;
            avgLatencyMs: number;
            totalCostUsd: number;
            bucket: string;
          }[];
          totals: {
            eventCount: number;
            toolCallCount: number;
            errorCount: number;
            avgLatencyMs: number;
            totalCostUsd: number;
            p50LatencyMs: number | null;
            p95LatencyMs: number | null;
            p99LatencyMs: number | null;
          };
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/analytics/agents": {
    /**
     * Per agent: sessions started, events, errors, spend, mean session duration, tool duration and LLM latency percentiles
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from?: string;
        to?: string;
        range?: "1h" | "6h" | "24h" | "3d" | "7d" | "30d";
        agentId?: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          agents: {
            agentId: string;
            sessionCount: number;
            totalEvents: number;
            totalErrors: number;
            errorRate: number;
            totalCostUsd: number;
            avgDurationMs: number;
            p50ToolDurationMs: number | null;
            p95ToolDurationMs: number | null;
            p99ToolDurationMs: number | null;
            p50LlmLatencyMs: number | null;
            p95LlmLatencyMs: number | null;
            p99LlmLatencyMs: number | null;
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/analytics/costs": {
    /**
     * Spend (llm_response and cost_tracked events) by agent and over time
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from?: string;
        to?: string;
        range?: "1h" | "6h" | "24h" | "3d" | "7d" | "30d";
        agentId?: string;
        granularity?: "hour" | "day" | "week";
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          byAgent: {
            agentId: string;
            totalCostUsd: number;
            totalInputTokens: number;
            totalOutputTokens: number;
            totalTokens: number;
            eventCount: number;
          }[];
          overTime: {
            bucket: string;
            totalCostUsd: number;
            eventCount: number;
          }[];
          totals: {
            totalCostUsd: number;
            totalInputTokens: number;
            totalOutputTokens: number;
            totalTokens: number;
          };
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/analytics/llm": {
    /**
     * LLM calls (llm_response events): cost, tokens, latency and latency percentiles by model and over time
     *
     * `summary` and each `byModel` row also carry the latency percentiles.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from?: string;
        to?: string;
        range?: "1h" | "6h" | "24h" | "3d" | "7d" | "30d";
        agentId?: string;
        granularity?: "hour" | "day" | "week";
        model?: string;
        provider?: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          summary: {
            totalCalls: number;
            totalCostUsd: number;
            totalInputTokens: number;
            totalOutputTokens: number;
            avgLatencyMs: number;
            avgCostPerCall: number;
            p50LatencyMs: number | null;
            p95LatencyMs: number | null;
            p99LatencyMs: number | null;
          };
          byModel: {
            calls: number;
            costUsd: number;
            inputTokens: number;
            outputTokens: number;
            avgLatencyMs: number;
            provider: string;
            model: string;
            p50LatencyMs: number | null;
            p95LatencyMs: number | null;
            p99LatencyMs: number | null;
          }[];
          byTime: {
            calls: number;
            costUsd: number;
            inputTokens: number;
            outputTokens: number;
            avgLatencyMs: number;
            bucket: string;
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/analytics/tools": {
    /**
     * Per tool: calls, errors (tool_error events), error rate, mean duration and duration percentiles
     *
     * `agentId`: that agent's calls.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        from?: string;
        to?: string;
        range?: "1h" | "6h" | "24h" | "3d" | "7d" | "30d";
        agentId?: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          tools: {
            toolName: string;
            callCount: number;
            errorCount: number;
            errorRate: number;
            avgDurationMs: number;
            p50DurationMs: number | null;
            p95DurationMs: number | null;
            p99DurationMs: number | null;
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
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
        resource?: "api_key" | "alert_rule" | "guardrail" | "settings" | "redaction_rule" | "legal_hold";
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/checkpoint": {
    /**
     * The latest signed checkpoint of the audit log, or the one at a tree size
     *
     * Scope: `read`.
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
          /** Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-observe", rootHash, timestamp, treeSize} (docs/audit.md) */
          signature: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        500: ObserveError;
        503: ObserveError;
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
          /** Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-observe", rootHash, timestamp, treeSize} (docs/audit.md) */
          signature: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        409: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/checkpoints": {
    /**
     * The checkpoints signed in a period, with their C2SP notes and cosignatures
     *
     * In tree-size order: the last checkpoint signed before `from` (when there is one: what the period's first extends), then those signed from `from` to `to` (inclusive), at most 100000; `truncated` says there were more.
     *
     * Scope: `read`.
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
              /** Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-observe", rootHash, timestamp, treeSize} (docs/audit.md) */
              signature: string;
            };
            /** The same tree head as a C2SP signed note; null for checkpoints signed before notes were */
            note: string | null;
            /** The witnesses' cosignature lines (tlog-cosignature) stored for it */
            cosignatures: string[];
          }[];
          truncated: boolean;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/consistency": {
    /**
     * A consistency proof between two tree sizes (RFC 9162 §2.1.4)
     *
     * Verify with the roots of the checkpoints at `from` and `to`. Empty when from = to, or from = 0.
     *
     * Scope: `read`.
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        409: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/derived/events": {
    /**
     * Every stored event's columns derived at ingest, with its place
     *
     * Raw, as stored (column names as in the database), for `vigil verify --deep` to compare with what it recomputes from the chained events (docs/audit.md#--deep). Pages by cursor in primary-key order: pass `nextCursor` as `cursor` until it is null.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** nextCursor of the previous page; absent for the first */
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rows: {
            id: string;
            session_id: string;
            seq: number;
            ts: number;
            agent_id: string;
            event_type: string;
            is_error: number;
            cost_usd: number | null;
            duration_ms: number | null;
            latency_ms: number | null;
            tool_name: string | null;
            call_id: string | null;
            provider: string | null;
            model: string | null;
            input_tokens: number | null;
            output_tokens: number | null;
            complexity_tier: string | null;
            finish_reason: string | null;
          }[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/derived/latency-sketches": {
    /**
     * Every hourly latency sketch bin as stored
     *
     * Raw, as stored (column names as in the database), for `vigil verify --deep` to compare with what it recomputes from the chained events (docs/audit.md#--deep). Pages by cursor in primary-key order: pass `nextCursor` as `cursor` until it is null.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** nextCursor of the previous page; absent for the first */
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rows: {
            hour: number;
            agent_id: string;
            metric: "tool" | "llm";
            tool_name: string;
            provider: string;
            model: string;
            bin: number;
            count: number;
          }[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/derived/latency-sketches-daily": {
    /**
     * Every daily latency sketch bin as stored
     *
     * Raw, as stored (column names as in the database), for `vigil verify --deep` to compare with what it recomputes from the chained events (docs/audit.md#--deep). Pages by cursor in primary-key order: pass `nextCursor` as `cursor` until it is null.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** nextCursor of the previous page; absent for the first */
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rows: {
            hour: number;
            agent_id: string;
            metric: "tool" | "llm";
            tool_name: string;
            provider: string;
            model: string;
            bin: number;
            count: number;
          }[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/derived/rollups": {
    /**
     * Every hourly rollup row as stored
     *
     * Raw, as stored (column names as in the database), for `vigil verify --deep` to compare with what it recomputes from the chained events (docs/audit.md#--deep). Pages by cursor in primary-key order: pass `nextCursor` as `cursor` until it is null.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** nextCursor of the previous page; absent for the first */
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rows: {
            hour: number;
            agent_id: string;
            event_type: string;
            tool_name: string;
            provider: string;
            model: string;
            tier: string;
            event_count: number;
            error_count: number;
            cost_usd: number;
            duration_sum: number;
            duration_count: number;
            latency_sum: number;
            latency_count: number;
            input_tokens: number;
            output_tokens: number;
            failure_count: number;
          }[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/derived/rollups-daily": {
    /**
     * Every daily rollup row as stored
     *
     * Raw, as stored (column names as in the database), for `vigil verify --deep` to compare with what it recomputes from the chained events (docs/audit.md#--deep). Pages by cursor in primary-key order: pass `nextCursor` as `cursor` until it is null.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** nextCursor of the previous page; absent for the first */
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rows: {
            hour: number;
            agent_id: string;
            event_type: string;
            tool_name: string;
            provider: string;
            model: string;
            tier: string;
            event_count: number;
            error_count: number;
            cost_usd: number;
            duration_sum: number;
            duration_count: number;
            latency_sum: number;
            latency_count: number;
            input_tokens: number;
            output_tokens: number;
            failure_count: number;
          }[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/derived/sessions": {
    /**
     * Every session row's counters, cost, status and times as stored
     *
     * Raw, as stored (column names as in the database), for `vigil verify --deep` to compare with what it recomputes from the chained events (docs/audit.md#--deep). Pages by cursor in primary-key order: pass `nextCursor` as `cursor` until it is null.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** nextCursor of the previous page; absent for the first */
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rows: {
            id: string;
            agent_id: string;
            agent_name: string;
            status: string;
            started_at: number;
            ended_at: number | null;
            last_event_at: number;
            event_count: number;
            tool_call_count: number;
            error_count: number;
            total_cost_usd: number;
            /** JSON array, as stored */
            tags: string;
            /** The chain head: seq of the last appended event, -1 when none */
            last_seq: number;
          }[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/erasures": {
    /**
     * Every erasure leaf of the audit log: its index, its data and the log key's signature (what `vigil verify` holds erased events to)
     *
     * `from` and `to` (ISO 8601, inclusive; optional) keep the erasures made in that period (an evidence pack’s deletion receipts), read from an index on the erasure time.
     *
     * Scope: `read`.
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/evidence-pack": {
    /**
     * Build the evidence pack of a period (what `vigil evidence` writes), for download
     *
     * The same assembly as `vigil evidence` (docs/audit.md, "Evidence packs"): observe's parts read with the caller's credential, and, when the `X-Vigil-Gate-Authorization` header carries a gate credential (the dashboard sends its gate session), the gate’s parts from GATE_URL with it. `content` is the pack (JSON lines), verifiable offline with `vigil verify evidence`; a read either service refuses is a 502 naming it.
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        from: string;
        to: string;
        /** Only these agents’ oversight records, breaches and error sessions (empty: every agent) */
        agents?: string[];
        /** The checkpoint interval the services run with: longer gaps are reported */
        intervalMs?: number;
      };
      bodyRequired: true;
      responses: {
        200: {
          /** A file name for the download: vigil-evidence-<from>-<to>.jsonl */
          fileName: string;
          /** Files in the pack: the manifest, the parts, the report and the signatures */
          files: number;
          /** The pack: one `{"path", "content"}` JSON line per file */
          content: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        502: ObserveError;
        503: ObserveError;
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/export": {
    /**
     * A session's self-contained audit bundle (verify it with `vigil verify`)
     *
     * Every stored event of the session as the canonical text its chain hash is computed over, in seq order, with the recorded head, each event's leaf index and inclusion proof to a signed checkpoint (signed now when the latest one does not cover every leaf of the session), the key that signed it and, with `since`, a consistency proof from that tree size. Format `vigil-audit-bundle/1` (docs/audit.md).
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        sessionId: string;
        since?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          format: "vigil-audit-bundle/1";
          log: string;
          sessionId: string;
          head: {
            seq: number;
            hash: string | null;
          };
          /** RFC 8785 canonical JSON of each event's chain object; its SHA-256 is the event hash */
          events: string[];
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
            /** Base64 Ed25519 signature over the canonical JSON of {keyId, log: "vigil-observe", rootHash, timestamp, treeSize} (docs/audit.md) */
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
          /** The signed erasure leaves covering events of the session whose content was erased (docs/guide/erasure.md): each leaf's data, the log key's signature over it and its inclusion proof */
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
          /** The session's head as committed at tree size `since` (else the checkpoint's): the heads leaf ending that tree, its inclusion proof there, the session's bucket of the map whole and the bucket's path to the map root (docs/audit.md, the heads map); absent when that tree does not end with a heads leaf */
          heads?: {
            treeSize: number;
            leafIndex: number;
            leaf: string;
            proof: string[];
            bucket: number;
            entries: string[];
            path: string[];
          };
          /** The session's tombstones after `heads`, with their inclusion proofs in the checkpoint */
          tombstones?: {
            leafIndex: number;
            body: string;
            signature: string;
            proof: string[];
          }[];
          exportedAt: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/heads": {
    /**
     * Every session's recorded chain head
     *
     * Sessions by id after `after` (keyset pages); `headSeq` is −1 and `headHash` null for a session without events. `nextCursor` is null on the last page.
     *
     * Scope: `read`.
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
          sessions: {
            sessionId: string;
            headSeq: number;
            headHash: string | null;
          }[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/inclusion": {
    /**
     * An inclusion proof (RFC 9162 §2.1.3) of an event
     *
     * The audit path of the leaf of an event in the tree of `treeSize` leaves (default: the latest checkpoint's). The leaf hash is SHA-256(0x00 || its 32-byte hash).
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        eventId: string;
        treeSize?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          eventId: string;
          leafIndex: number;
          leafHash: string;
          treeSize: number;
          proof: string[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/leaves": {
    /**
     * The audit log's leaves from an index, in order, with their events
     *
     * An index range of the log (at most `limit`), each leaf with its session, its event as the canonical text its hash is computed over (null when the event row is gone) and, for a tombstone leaf (chains deleted), its signed body. A leaf without a session and tombstone logs an administrative change (but a key-rotation leaf, which `GET /api/audit/public-key` lists as a key's certificate): `change` is its row's canonical text (null when the row is gone), whose SHA-256 is the leaf's data. `treeSize` is the log's size now.
     *
     * Scope: `read`.
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
            sessionId: string | null;
            eventId: string | null;
            event: string | null;
            /** What the leaf logs, as stored with it: `event`, `tombstone`, `key-rotation`, `change`, or another record the service logs */
            kind: string | null;
            tombstone: {
              body: string;
              signature: string;
            } | null;
            /** On a change leaf: the change row as canonical JSON; null when the row is gone */
            change?: string | null;
            /** On a heads leaf (the last leaf of a checkpoint's tree): its data, the map of heads' root it commits */
            heads?: string;
            /** The credential recorded as the event's writer, where the service records one (null: not recorded) */
            writtenBy?: string | null;
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/public-key": {
    /**
     * The audit log's checkpoint signing keys
     *
     * `keyId`, `publicKey` and `publicKeyPem` are the current key; `keys` lists every key that has signed checkpoints, current one included. A listed key proves nothing by itself (anyone who writes the database can add one): verifiers trust a pinned key and the keys certified by one (docs/audit.md).
     *
     * Scope: `read`.
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/tlog/checkpoint": {
    /**
     * The latest checkpoint as a C2SP signed note, with its cosignatures
     *
     * text/plain: the tlog-checkpoint text (origin AUDIT_LOG_ORIGIN, by default `<log>/<keyId>`; tree size; base64 root hash), a blank line, the log's Ed25519 note signature (key name AUDIT_NOTE_KEY_NAME, by default the origin; its verifier key is `noteVerifierKey` of GET /api/audit/public-key), then every stored tlog-cosignature v1 line of the witnesses (docs/audit.md).
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: string;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        500: ObserveError;
        503: ObserveError;
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        422: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/tlog/tile/{path}": {
    /**
     * A hash tile of the audit log (c2sp.org/tlog-tiles)
     *
     * The path after `tile/` is `<L>/<N>[.p/<W>]` as tlog-tiles spells it (N in 3-digit groups, all but the last prefixed with x). The body is the W (256 for a full tile) concatenated 32-byte hashes: at level 0 leaf hashes, at level L the roots of the subtrees of 256^L leaves. Tiles within the latest checkpoint only; entry bundles (`tile/entries/…`) are never served: the content of what is logged does not leave Vigil.
     *
     * Scope: `read`.
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/tombstones": {
    /**
     * The signed tombstones of a period (scopes the service removed from its log)
     *
     * Each tombstone leaf whose timestamp lies from `from` to `to` (inclusive), in log order: its leaf data (`body`, canonical JSON) and the audit key’s signature over those bytes (docs/audit.md).
     *
     * Scope: `read`.
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/unlogged": {
    /**
     * Stored events that have no leaf in the audit log
     *
     * Events written outside the service's write path (every event it stores gets its leaf in the same transaction). Paged by event id; `nextCursor` is null on the last page. Scans the events table.
     *
     * Scope: `read`.
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
          events: {
            sessionId: string;
            seq: number;
            eventId: string;
          }[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/unlogged-changes": {
    /**
     * Stored change-log rows that have no leaf in the audit log
     *
     * Administrative changes written outside the service (every change it records gets its leaf in the same transaction). Paged by change id; `nextCursor` is null on the last page. Scans the change log.
     *
     * Scope: `read`.
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/audit/verify": {
    /**
     * Verify a session's hash chain
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        sessionId: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          sessionId: string;
          valid: boolean;
          eventCount: number;
          headHash: string | null;
          brokenAt: {
            seq: number;
            eventId: string | null;
            reason: string;
          } | null;
          /** The erasures whose signed leaves cover events of the chain (their content replaced by an erasure marker); absent when none */
          erasures?: {
            erasureId: string;
            eventIds: string[];
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/benchmarks": {
    /**
     * List benchmarks, newest first
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        status?: "draft" | "running" | "completed" | "cancelled";
        agentId?: string;
        limit?: number;
        offset?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          benchmarks: BenchmarkListItem[];
          total: number;
          hasMore: boolean;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Create an A/B benchmark (status draft)
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        description?: string;
        agentId?: string;
        variants: {
          name: string;
          tag: string;
          description?: string;
          agentId?: string;
        }[];
        metrics?: string[];
        minSessionsPerVariant?: number;
        timeRange?: {
          from?: string;
          to?: string;
        };
      };
      bodyRequired: true;
      responses: {
        201: Benchmark;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/benchmarks/{id}": {
    /**
     * One benchmark, with the number of sessions of each variant
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Benchmark;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Delete a draft or cancelled benchmark
     *
     * A running or completed benchmark is a 409.
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
        204: void;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/benchmarks/{id}/results": {
    /**
     * Statistical comparison of the variants (cached once completed)
     *
     * 400 while the benchmark is a draft. How the variants are compared: docs/api.md, *Benchmarks*.
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: {
        includeDistributions?: "true" | "false";
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: BenchmarkResults;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/benchmarks/{id}/status": {
    /**
     * Move a benchmark through draft → running → completed (or cancelled)
     *
     * A move outside the state table (draft → running or cancelled; running → completed or cancelled) is a 409.
     *
     * Scope: `admin`.
     */
    put: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        status: "draft" | "running" | "completed" | "cancelled";
      };
      bodyRequired: true;
      responses: {
        200: Benchmark;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/config": {
    /**
     * Configuration (secrets are reported as set or not, never returned)
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Config;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Update retention and webhook secrets; a secret set to null falls back to the environment. The body GET returned is accepted: its read-only fields are ignored
     *
     * `retentionDays` 0 keeps everything. Secrets are answered as set or unset only.
     *
     * Scope: `admin`.
     */
    put: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        /** Read-only: ignored */
        approvalGateSecretSet?: boolean;
        /** Read-only: ignored */
        formServiceSecretSet?: boolean;
        /** Read-only: ignored */
        authDisabled?: boolean;
        /** Read-only: ignored */
        memoryEnabled?: boolean;
        retentionDays?: number;
        approvalGateWebhookSecret?: string | null;
        formServiceWebhookSecret?: string | null;
      };
      bodyRequired: true;
      responses: {
        200: Config;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        422: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/config/features": {
    /**
     * Feature flags
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          memory: boolean;
          memoryUrl: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/config/health-weights": {
    /**
     * Health score weights in use
     *
     * The weights are fixed: `{errorRate: 0.3, costEfficiency: 0.2, toolSuccess: 0.2, latency: 0.15, completionRate: 0.15}`.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          errorRate: number;
          costEfficiency: number;
          toolSuccess: number;
          latency: number;
          completionRate: number;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/context": {
    /**
     * Sessions relevant to a topic (similarity and recency), with key events, and lessons from the memory server
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        topic: string;
        userId?: string;
        agentId?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          topic: string;
          sessions: ContextSession[];
          lessons: ContextLesson[];
          summary: string;
          totalSessions: number;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/datasets": {
    /**
     * List datasets, newest first
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          datasets: {
            id: string;
            name: string;
            caseCount: number;
            createdAt: string;
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Create a dataset of 1 to 1000 cases
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        cases: {
          input: unknown;
          expected?: unknown;
        }[];
      };
      bodyRequired: true;
      responses: {
        201: Dataset;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/datasets/{id}": {
    /**
     * One dataset with its cases
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Dataset;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/datasets/{id}/runs": {
    /**
     * A dataset's runs, newest first, without their cases
     *
     * 404 for an unknown dataset.
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: {
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          runs: EvalRunSummary[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Run every case of a dataset against an agent webhook, in the background
     *
     * Answers 202 with the run; its cases run in the background.
     *
     * Scope: `admin`.
     */
    post: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        agentId: string;
        webhookUrl: string;
        evaluatorId?: string;
        caseTimeoutSeconds?: number;
      };
      bodyRequired: true;
      responses: {
        202: EvalRun;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/erasures/{id}": {
    /**
     * An erasure's signed deletion receipt, again
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: ErasureReceipt;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/eval/sessions/{sessionId}/compliance": {
    /**
     * Score a session against deterministic rules and chain the verdict as an eval_result
     *
     * 409 when the session's chain is broken. The score is rules passed / rules evaluated; passing is inclusive (score ≥ threshold).
     *
     * Scope: `admin`.
     */
    post: {
      params: {
        sessionId: string;
      };
      query: Record<string, never>;
      body: {
        rules?: ({
          id: string;
          type: "tool_denylist";
          tools: string[];
          description?: string;
        } | {
          id: string;
          type: "tool_allowlist";
          tools: string[];
          description?: string;
        } | {
          id: string;
          type: "max_cost";
          maxUsd: number;
          description?: string;
        } | {
          id: string;
          type: "no_severity_above";
          severity: "debug" | "info" | "warn" | "error" | "critical";
          description?: string;
        })[];
        passThreshold?: number;
        evaluatorId?: string;
      };
      bodyRequired: true;
      responses: {
        201: ComplianceResult;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/eval/sessions/{sessionId}/score": {
    /**
     * Score a session with an LLM judge against a rubric and chain the verdict as an eval_result
     *
     * 503 when no judge is configured, 400 for an unpriced model, 502 when the judge gives no valid verdict.
     *
     * Scope: `admin`.
     */
    post: {
      params: {
        sessionId: string;
      };
      query: Record<string, never>;
      body: {
        rubric?: string;
        model?: string;
        passThreshold?: number;
        evaluatorId?: string;
      };
      bodyRequired: true;
      responses: {
        201: JudgeResult;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        502: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/evaluators": {
    /**
     * List evaluators, newest first
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          evaluators: Evaluator[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Save an evaluator
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        kind: "compliance" | "llm_judge";
        rules?: ({
          id: string;
          type: "tool_denylist";
          tools: string[];
          description?: string;
        } | {
          id: string;
          type: "tool_allowlist";
          tools: string[];
          description?: string;
        } | {
          id: string;
          type: "max_cost";
          maxUsd: number;
          description?: string;
        } | {
          id: string;
          type: "no_severity_above";
          severity: "debug" | "info" | "warn" | "error" | "critical";
          description?: string;
        })[];
        rubric?: string;
        passThreshold?: number;
        model?: string;
      };
      bodyRequired: true;
      responses: {
        201: Evaluator;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/evaluators/{id}": {
    /**
     * One evaluator
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Evaluator;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Delete an evaluator (runs already started keep their copy of it)
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/events": {
    /**
     * Query events
     *
     * `search`: words of the payload's text, as a phrase. Ordered by timestamp (`order`).
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        sessionId?: string;
        agentId?: string;
        eventType?: string;
        severity?: string;
        from?: string;
        to?: string;
        search?: string;
        order?: "asc" | "desc";
        limit?: number;
        offset?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          events: Event[];
          total: number;
          hasMore: boolean;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Ingest a batch of 1 to 1000 events, atomically
     *
     * All events are stored or none. With an `Idempotency-Key` (docs/api.md, *Idempotent ingest*): a repeat of a stored key answers the first answer again with `Idempotent-Replayed: true`; 409 while the key's first request is still being stored (`Retry-After: 1`); 422 when the key was used with another body; 400 for a malformed key.
     *
     * Scope: `ingest`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        events: ({
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "session_started";
          payload: {
            agentName?: string;
            agentVersion?: string;
            mcpClientInfo?: {
              [key: string]: unknown;
            };
            tags?: string[];
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "session_ended";
          payload: {
            reason: "completed" | "error" | "timeout" | "manual";
            summary?: string;
            totalToolCalls?: number;
            totalDurationMs?: number;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "tool_call";
          payload: {
            toolName: string;
            callId: string;
            arguments: unknown;
            serverName?: string;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "tool_response";
          payload: {
            callId: string;
            toolName: string;
            result: unknown;
            durationMs: number;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "tool_error";
          payload: {
            callId: string;
            toolName: string;
            error: unknown;
            errorCode?: string | number;
            durationMs: number;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "approval_requested";
          payload: {
            requestId: string;
            action: string;
            params: unknown;
            urgency: "low" | "normal" | "high" | "critical";
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "approval_granted";
          payload: {
            requestId: string;
            action: string;
            decidedBy: string;
            reason?: string;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "approval_denied";
          payload: {
            requestId: string;
            action: string;
            decidedBy: string;
            reason?: string;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "approval_expired";
          payload: {
            requestId: string;
            action: string;
            decidedBy: string;
            reason?: string;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "form_submitted";
          payload: {
            submissionId: string;
            formId: string;
            formName?: string;
            fieldCount: number;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "form_completed";
          payload: {
            submissionId: string;
            formId: string;
            completedBy: string;
            durationMs: number;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "form_expired";
          payload: {
            submissionId: string;
            formId: string;
            expiredAfterMs: number;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "llm_call";
          payload: {
            callId: string;
            provider: string;
            model: string;
            messages: unknown[];
            systemPrompt?: string;
            parameters?: {
              [key: string]: unknown;
            };
            tools?: unknown[];
            redacted?: boolean;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "llm_response";
          payload: {
            callId: string;
            provider: string;
            model: string;
            completion: unknown;
            toolCalls?: unknown[];
            finishReason: string;
            usage: {
              inputTokens: number;
              outputTokens: number;
              totalTokens?: number;
              [key: string]: unknown;
            };
            costUsd: number;
            latencyMs: number;
            redacted?: boolean;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "cost_tracked";
          payload: {
            provider: string;
            model: string;
            inputTokens: number;
            outputTokens: number;
            totalTokens: number;
            costUsd: number;
            trigger?: string;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "alert_triggered";
          payload: {
            alertRuleId: string;
            alertName: string;
            condition: string;
            currentValue: number;
            threshold: number;
            message: string;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "alert_resolved";
          payload: {
            alertRuleId: string;
            alertName: string;
            resolvedBy?: string;
            [key: string]: unknown;
          };
        } | {
          sessionId: string;
          agentId: string;
          severity?: "debug" | "info" | "warn" | "error" | "critical";
          metadata?: {
            [key: string]: unknown;
          };
          timestamp?: string;
          eventType: "custom";
          payload: {
            type: string;
            data: unknown;
            [key: string]: unknown;
          };
        })[];
      };
      bodyRequired: true;
      responses: {
        201: {
          ingested: number;
          events: {
            id: string;
            hash: string;
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        409: ObserveError;
        413: ObserveError;
        415: ObserveError;
        422: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/events/ingest": {
    /**
     * Webhook ingestion: maps an approval_gate, form_service or generic webhook to one event
     *
     * approval_gate and form_service bodies are signed: X-Webhook-Signature = hex HMAC-SHA256 of the raw body with the source's secret (no API key needed). generic needs an API key; data holds eventType plus the payload fields.
     *
     * Scope: `ingest`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: WebhookIngestBodyInput;
      bodyRequired: true;
      responses: {
        201: {
          ok: true;
          eventId: string;
          eventType: string;
          sessionId: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/events/ingest/batch": {
    /**
     * Webhook ingestion in batches: many signed approval_gate or form_service webhooks in one request, one transaction
     *
     * The body is signed as a whole (X-Webhook-Signature = hex HMAC-SHA256 of the raw body with the source's secret). Each element of `events` is a body POST /api/events/ingest accepts, of the same source. The valid ones are appended together; `results` answers each element in order, so one bad element does not hold the others back.
     *
     * Scope: `ingest`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: WebhookIngestBatchBodyInput;
      bodyRequired: true;
      responses: {
        201: {
          /** One per element of `events`, in order */
          results: ({
            ok: true;
            eventId: string;
            eventType: string;
            sessionId: string;
          } | {
            ok: false;
            /** Why this element was refused (as the single route would answer it) */
            error: string;
          })[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/events/{id}": {
    /**
     * One event
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Event;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/guardrails": {
    /**
     * List guardrail rules, newest first; `agentId`: the rules that apply to that agent (its own and those of every agent)
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        agentId?: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rules: GuardrailRule[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Create a guardrail rule
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        description?: string | null;
        agentId?: string | null;
        conditionType: "error_rate_threshold" | "cost_limit" | "health_score_threshold" | "custom_metric";
        conditionConfig: {
          [key: string]: unknown;
        };
        actionType: "pause_agent" | "notify_webhook" | "downgrade_model" | "approval_policy";
        actionConfig?: {
          [key: string]: unknown;
        };
        cooldownMinutes?: number;
        enabled?: boolean;
        dryRun?: boolean;
      };
      bodyRequired: true;
      responses: {
        201: GuardrailRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        409: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/guardrails/history": {
    /**
     * Trigger history of every rule (dry runs included), newest first
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        ruleId?: string;
        from?: string;
        to?: string;
        limit?: number;
        offset?: number;
        agentId?: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          triggers: GuardrailTrigger[];
          total: number;
          hasMore: boolean;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/guardrails/{id}": {
    /**
     * One guardrail rule
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: GuardrailRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Change a guardrail rule; only the given fields change (each config is replaced whole); the rule GET answered is accepted, its read-only fields ignored
     *
     * Scope: `admin`.
     */
    put: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        /** Read-only: ignored */
        id?: string;
        /** Read-only: ignored */
        triggerCount?: number;
        /** Read-only: ignored */
        lastTriggeredAt?: string | null;
        /** Read-only: ignored */
        createdAt?: string;
        /** Read-only: ignored */
        updatedAt?: string;
        name?: string;
        description?: string | null;
        agentId?: string | null;
        conditionType?: "error_rate_threshold" | "cost_limit" | "health_score_threshold" | "custom_metric";
        conditionConfig?: {
          [key: string]: unknown;
        };
        actionType?: "pause_agent" | "notify_webhook" | "downgrade_model" | "approval_policy";
        actionConfig?: {
          [key: string]: unknown;
        };
        cooldownMinutes?: number;
        enabled?: boolean;
        dryRun?: boolean;
      };
      bodyRequired: true;
      responses: {
        200: GuardrailRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Delete a guardrail rule; its trigger history is kept
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
          ok: true;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/guardrails/{id}/status": {
    /**
     * Rule status: the rule, ready, in cooldown (per agent) or disabled, with its recent triggers
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: GuardrailStatus;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/health": {
    /**
     * Liveness, with a database round trip (no authentication)
     *
     * Answers the shape DECISIONS.md gives plus `firstKeyBootstrap`: `closed` once an API key exists, `loopback` while the open first-key bootstrap is reachable from this machine only, `exposed` while it is reachable beyond it (the start and the dashboard warn then). It is here rather than on a route of its own because health is the one route the spec leaves without authentication, and the dashboard must read it before anyone has a key. 503 `{status: "degraded", version, db: {ok: false, latencyMs: null}}` when the database does not answer.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          status: "ok";
          version: string;
          db: {
            ok: boolean;
            latencyMs: number;
          };
          firstKeyBootstrap: "closed" | "loopback" | "exposed";
        };
        400: ObserveError;
        500: ObserveError;
        503: {
          status: "degraded";
          version: string;
          db: {
            ok: boolean;
            latencyMs: number | null;
          };
        };
      };
    };
  };
  "/api/health/history": {
    /**
     * Daily health snapshots of an agent over the last `days` UTC days (today included), oldest first
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        agentId: string;
        /** Days back, today included (1 to 365) */
        days?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          snapshots: HealthSnapshot[];
          agentId: string;
          days: number;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/health/overview": {
    /**
     * Health of every agent with a session in the window, sickest first
     *
     * Lowest score first.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** Window in days (1 to 90) */
        window?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          agents: AgentHealth[];
          computedAt: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/holds": {
    /**
     * Legal holds, newest first (those in force and those released), as the change log records them
     *
     * Answered from the change log whose audit-log leaves verify, the same evidence retention and erasure decide by: a row of the holds table inserted, deleted or edited in the database changes nothing here.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        /** true: only holds in force; false: only released ones */
        active?: "true" | "false";
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          holds: LegalHold[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Place a legal hold on a session, an agent or a data subject: retention keeps what it covers and erasure is refused (409) until it is released
     *
     * A subject is given by its id and stored as its keyed hash. Placing is recorded in the change log (resource `legal_hold`, action `created`).
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        scope: "session" | "agent" | "subject";
        /** A session id, an agent id or a data subject id (stored as its keyed hash) */
        targetId: string;
        /** Why the data must be kept (a matter, a case number) */
        reason: string;
      };
      bodyRequired: true;
      responses: {
        201: LegalHold;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/holds/{id}": {
    /**
     * One legal hold
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: LegalHold;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/holds/{id}/release": {
    /**
     * Release a legal hold; it stays listed, released. Recorded in the change log (action `revoked`)
     *
     * Scope: `admin`.
     */
    post: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        /** Why the hold ends */
        reason: string;
      };
      bodyRequired: true;
      responses: {
        200: LegalHold;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/internal/agents/{id}/pause": {
    /**
     * Pause an agent for the gate (a budget's hard threshold; service token only); an agent already paused keeps its first pause
     *
     * An agent not seen yet is a 404. 503 when `INTERNAL_SERVICE_TOKEN` is unset.
     */
    post: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        reason: string;
      };
      bodyRequired: true;
      responses: {
        200: Agent;
        400: ObserveError;
        401: ObserveError;
        404: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/internal/eval/guardrail-breach": {
    /**
     * Record a denied action reported by the approval service (service token only)
     *
     * 503 when `INTERNAL_SERVICE_TOKEN` is unset.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        sessionId: string;
        agentId: string;
        breach: {
          ruleId: string;
          ruleType?: string;
          tool?: string;
          reason?: string;
          source: string;
        };
      };
      bodyRequired: true;
      responses: {
        201: {
          recorded: true;
          eventId: string;
        };
        400: ObserveError;
        401: ObserveError;
        409: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/internal/spend": {
    /**
     * Spend per scope and window, for the gate's budgets (service token only)
     *
     * Each query names a scope (agent, session, tag, tenant; without `value`: each agent or session), a UTC window (hour, day, calendar month, or the session) and answers its figures: what each key spent since the window start, the same sums as GET /api/analytics/costs. 503 when `INTERNAL_SERVICE_TOKEN` is unset.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        queries: {
          id: string;
          scope: "agent" | "session" | "tag" | "tenant";
          value?: string;
          window: "session" | "hour" | "day" | "month";
          minUsd?: number;
        }[];
      };
      bodyRequired: true;
      responses: {
        200: {
          at: number;
          results: {
            id: string;
            windowStart: number;
            figures: {
              key: string;
              spendUsd: number;
              agentIds: string[];
            }[];
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/keys": {
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
          keys: ApiKey[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Create an API key; the raw key is in this response only
     *
     * Without an Authorization header only while no active key exists (first start-up); that key has full access. Needs the admin scope; without `scopes` the new key has full access (admin).
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        /** ingest: send events and read agent records (pause, overrides); read: every query; admin: everything */
        scopes?: ("ingest" | "read" | "admin")[];
      };
      bodyRequired: true;
      responses: {
        201: {
          id: string;
          name: string;
          prefix: string;
          scopes: ("ingest" | "read" | "admin")[];
          createdAt: string;
          lastUsedAt: string | null;
          revokedAt: string | null;
          key: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/keys/{id}": {
    /**
     * Revoke an API key
     *
     * Revoking the last active key reopens key creation without credentials (the first-key bootstrap): the answer then carries `warning`. While observe listens beyond loopback that revocation is refused (409 last_key) unless `force=true`. A key already revoked answers the same again.
     *
     * Scope: `admin`.
     */
    delete: {
      params: {
        id: string;
      };
      query: {
        /** Revoke the last active key even while observe listens beyond loopback */
        force?: "true" | "false";
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          id: string;
          revoked: true;
          warning?: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/llm-calls": {
    /**
     * List LLM calls (llm_response events)
     *
     * Filters combine. `status`: error when the response is an error event (severity error or critical). Sorted by `sort` then id, in `order`; pages by cursor: pass `nextCursor` as `cursor` (with the same sort) until it is null. Only figures are listed: the prompt and completion are in the call's detail.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        model?: string;
        agentId?: string;
        sessionId?: string;
        status?: "success" | "error";
        /** time: the timestamp; tokens: input plus output */
        sort?: "time" | "cost" | "latency" | "tokens";
        order?: "asc" | "desc";
        /** nextCursor of the previous page, with the same sort; absent for the first */
        cursor?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          calls: LlmCall[];
          nextCursor: string | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/llm-calls/{id}": {
    /**
     * One LLM call: its prompt, completion, tokens, cost and the price of its model
     *
     * `prompt` is the llm_call event of the same session and callId. `costUsd` is what the agent recorded; `price` is the price table's entry for the model (built-in or MODEL_PRICES) and `costAtPriceUsd` the call's tokens at it. Erased or crypto-shredded content is reported as such (`content`, `promptContent`), never shown.
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: LlmCallDetail;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/optimize/recommendations": {
    /**
     * Cheaper models of the same provider per agent, model and complexity tier, with estimated monthly savings
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        agentId?: string;
        period?: number;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          recommendations: OptimizeRecommendation[];
          totalPotentialSavings: number;
          period: number;
          analyzedCalls: number;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/recall": {
    /**
     * Semantic search over events and sessions, ranked by cosine similarity
     *
     * Results by cosine similarity (0–1). How events get a vector: docs/api.md, *Recall and context*.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        query: string;
        scope?: "all" | "events" | "sessions";
        agentId?: string;
        from?: string;
        to?: string;
        limit?: number;
        minScore?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          results: RecallResult[];
          query: string;
          totalResults: number;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/recall/status": {
    /**
     * Embedding backend, queue depth (0 once everything ingested is searchable) and vector counts
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          embedder: {
            backend: "local" | "openai";
            model: string;
            dimensions: number;
          };
          queue: {
            depth: number;
            retrying: number;
            oldestEnqueuedAt: string | null;
          };
          vectors: {
            stored: number;
            indexed: number;
          };
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/redaction/dry-run": {
    /**
     * What a redaction rule (or detectors) would change on the most recent events, changing nothing
     *
     * Give a rule definition (`rule`), a stored rule (`ruleId`) or `detectors`; the `limit` most recent events are redacted in memory and those that would change are answered as they would be stored.
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        rule?: {
          kind: "path";
          path: string;
          label?: string;
        } | {
          kind: "regex";
          pattern: string;
          flags?: string;
          label?: string;
        };
        ruleId?: string;
        detectors?: ("email" | "phone" | "card" | "iban" | "secret")[];
        limit?: number;
      };
      bodyRequired: true;
      responses: {
        200: {
          /** How many of the most recent events were tried */
          examined: number;
          /** How many of them the rule would change */
          matched: number;
          /** The events the rule would change, as they would be stored; nothing is changed */
          events: {
            id: string;
            sessionId: string;
            timestamp: string;
            redactions: {
              rule: string;
              count: number;
            }[];
            payload: {
              [key: string]: unknown;
            };
            metadata: {
              [key: string]: unknown;
            };
          }[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/redaction/rules": {
    /**
     * List the redaction rules added through the API, newest first (those of REDACTION_RULES_FILE are configuration)
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          rules: RedactionRule[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Create a redaction rule; it applies to every event ingested from then on (a regular expression that can backtrack catastrophically is refused)
     *
     * Scope: `admin`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        name: string;
        description?: string | null;
        enabled?: boolean;
        kind: "path";
        path: string;
        label?: string;
      } | {
        name: string;
        description?: string | null;
        enabled?: boolean;
        kind: "regex";
        pattern: string;
        flags?: string;
        label?: string;
      };
      bodyRequired: true;
      responses: {
        201: RedactionRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/redaction/rules/{id}": {
    /**
     * One redaction rule
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: RedactionRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Change a redaction rule; only the given fields change; the rule GET answered is accepted, its read-only fields ignored
     *
     * Scope: `admin`.
     */
    put: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: {
        /** Read-only: ignored */
        id?: string;
        /** Read-only: ignored */
        createdAt?: string;
        /** Read-only: ignored */
        updatedAt?: string;
        name?: string;
        description?: string | null;
        enabled?: boolean;
        kind?: "path" | "regex";
        path?: string | null;
        pattern?: string | null;
        flags?: string | null;
        label?: string;
      };
      bodyRequired: true;
      responses: {
        200: RedactionRule;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        413: ObserveError;
        414: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
    /**
     * Delete a redaction rule; events already stored keep their markers
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
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/reflect": {
    /**
     * Patterns in the events of a time range: error patterns, tool sequences, cost by model, performance trend
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        analysis: "error_patterns" | "tool_sequences" | "cost_analysis" | "performance_trends";
        agentId?: string;
        from?: string;
        to?: string;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          analysis: "error_patterns" | "tool_sequences" | "cost_analysis" | "performance_trends";
          insights: ReflectInsight[];
          metadata: {
            sessionsAnalyzed: number;
            eventsAnalyzed: number;
            timeRange: {
              from: string;
              to: string;
            };
          };
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/runs/{id}": {
    /**
     * An evaluation run with the outcome of each case
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: EvalRun;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/sessions": {
    /**
     * List sessions, newest first
     *
     * `from`/`to` filter on `startedAt`; `tags`: every tag listed must be carried. The system agent's `alert:<ruleId>` sessions are listed only with `agentId=system`.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        agentId?: string;
        status?: string;
        from?: string;
        to?: string;
        tags?: string;
        limit?: number;
        offset?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          sessions: Session[];
          total: number;
          hasMore: boolean;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/sessions/{id}": {
    /**
     * One session
     *
     * `durationMs`: `endedAt`, else the last event before the first silence longer than `SESSION_IDLE_TIMEOUT_MS`, else `lastEventAt`, minus `startedAt` (the one duration replay and the figures use too).
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: Session;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/sessions/{id}/replay": {
    /**
     * Replay a session step by step, with the context reconstructed at every step
     *
     * One step per event in timeline order, each with its `context` (the session right after that event) and the event paired with it. The `eventTypes` groups: `error` = error events, `decision` = approval_*, form_* and eval_result, `observation` = custom, cost_tracked and alert_*. See docs/guide/behaviour.md, *Replay*.
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: {
        offset?: number;
        limit?: number;
        /** Comma-separated filter, any of: session_started, session_ended, llm_call, llm_response, tool_call, tool_response, error, decision, observation, custom */
        eventTypes?: string;
        /** true (default) or false: include the reconstructed context of every step */
        includeContext?: "true" | "false";
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          session: {
            id: string;
            agentId: string;
            status: string;
            startedAt: string;
            endedAt?: string;
          };
          chainValid: boolean;
          totalSteps: number;
          steps: {
            index: number;
            event: {
              id: string;
              seq: number;
              eventType: string;
              timestamp: string;
              payload: {
                [key: string]: unknown;
              };
              /** The credential that wrote the event, as on events (docs/audit.md#who-wrote-an-event). */
              writtenBy: string | null;
            };
            pairedEvent: {
              id: string;
              seq: number;
              eventType: string;
              timestamp: string;
              payload: {
                [key: string]: unknown;
              };
              /** The credential that wrote the event, as on events (docs/audit.md#who-wrote-an-event). */
              writtenBy: string | null;
            } | null;
            pairDurationMs: number | null;
            context?: {
              eventIndex: number;
              totalEvents: number;
              cumulativeCostUsd: number;
              elapsedMs: number;
              eventCounts: {
                [key: string]: number;
              };
              llmHistory: {
                callId: string;
                provider: string | null;
                model: string | null;
                messages: unknown;
                response: unknown;
                costUsd: number | null;
                latencyMs: number | null;
              }[];
              toolResults: {
                callId: string;
                toolName: string | null;
                ok: boolean;
                result: unknown;
                error: unknown;
                durationMs: number | null;
              }[];
              pendingApprovals: {
                requestId: string;
                action: string | null;
                urgency: string | null;
                requestedAt: string;
              }[];
              errorCount: number;
              warnings: {
                eventIndex: number;
                eventId: string;
                code: string;
                message: string;
              }[];
            };
          }[];
          pagination: {
            offset: number;
            limit: number;
            hasMore: boolean;
          };
          summary: {
            totalCost: number;
            totalDurationMs: number;
            totalLlmCalls: number;
            totalToolCalls: number;
            totalErrors: number;
            models: string[];
            tools: string[];
          };
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/sessions/{id}/steps": {
    /**
     * A session's events as steps, a page at a time
     *
     * Each event with the figures ingest derives from it (tool or model, cost, latency, tokens, error) and no payload: what comparing two sessions reads (the dashboard aligns them). In `seq` order, after `after`; `nextAfter` is the `after` of the next page, null on the last.
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: {
        after?: number;
        limit?: number;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          steps: SessionStep[];
          nextAfter: number | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/sessions/{id}/timeline": {
    /**
     * A session's events ascending by time, with the verdict of its hash chain
     *
     * Events by timestamp, then `seq`.
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          events: Event[];
          chainValid: boolean;
          brokenAt: {
            seq: number;
            eventId: string | null;
            reason: string;
          } | null;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/sessions/{id}/tree": {
    /**
     * A session's spans and call pairs as nested nodes with timings
     *
     * The session's spans (nested by `parentSpanId`) and SDK call pairs (by `callId`) as nodes with their children, built from the first 10,000 events (`truncated: true` beyond). See docs/guide/behaviour.md, *Trace trees*.
     *
     * Scope: `read`.
     */
    get: {
      params: {
        id: string;
      };
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          sessionId: string;
          startTime: string | null;
          endTime: string | null;
          durationMs: number;
          eventCount: number;
          nodeCount: number;
          /** True when the session has more than the 10,000 events a tree is built from */
          truncated: boolean;
          eventLimit: number;
          roots: TreeNode[];
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/stats": {
    /**
     * Storage statistics
     *
     * `judgeSpendUsd` is the judge's cost (eval_result events), never part of the agents' spend.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        200: {
          totalEvents: number;
          totalSessions: number;
          totalAgents: number;
          oldestEvent: string | null;
          newestEvent: string | null;
          storageSizeBytes: number;
          judgeSpendUsd: number;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/stream": {
    /**
     * A live stream of new events and session updates
     *
     * Server-Sent Events. Messages: `ready` first (data `{resumed, reset?}`), then `session` (the session summary, as GET /api/sessions/:id returns it, sent before the events of a batch that changed it) and `event` (the stored event, as GET /api/events returns it), in commit order. Every message's `id` is a cursor: reconnecting with it as `Last-Event-ID` (or `?lastEventId=`; the header wins) replays every matching event committed after it, exactly once. A cursor older than 24 hours or not from this database starts the stream at the current end, with `reset` set in `ready`. A comment line (with the cursor as `id`) comes every STREAM_HEARTBEAT_MS. Authenticate with a key, or with `?token=` from POST /api/stream/tokens.
     *
     * Scope: `read`.
     */
    get: {
      params: Record<string, never>;
      query: {
        sessionId?: string;
        agentId?: string;
        eventType?: string;
        /** Which messages to send: events, sessions or both (default) */
        include?: string;
        /** Where to resume, for clients that cannot set the Last-Event-ID header */
        lastEventId?: string;
        /** A stream token from POST /api/stream/tokens, instead of an Authorization header */
        token?: string;
      };
      body: never;
      bodyRequired: false;
      responses: {
        200: string;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/stream/tokens": {
    /**
     * A token that opens GET /api/stream?token= for 60 seconds (for browsers' EventSource)
     *
     * The token acts as the key that created it, only on GET /api/stream; revoking the key ends it too, and ends open streams at their next heartbeat.
     *
     * Scope: `read`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: never;
      bodyRequired: false;
      responses: {
        201: {
          token: string;
          expiresAt: string;
        };
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/api/subjects/{id}": {
    /**
     * Erase a data subject: every event naming it keeps its id, seq and hash while its content becomes an erasure marker, under one signed erasure leaf
     *
     * Removes the content from the events, the full-text index, the stored vectors and summaries, and every in-memory cache; the answer is a signed deletion receipt (docs/guide/erasure.md). A legal hold in force on the subject, one of its sessions or their agents answers 409 and erases nothing.
     *
     * Scope: `admin`.
     */
    delete: {
      params: {
        /** The data subject's id, as events name it (SUBJECT_PATHS) */
        id: string;
      };
      query: Record<string, never>;
      body: {
        /** Why the subject is erased (e.g. "GDPR Art. 17 request 2026-0142"); recorded in the signed leaf */
        reason: string;
      };
      bodyRequired: true;
      responses: {
        200: ErasureReceipt;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        404: ObserveError;
        409: ObserveError;
        414: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/mcp": {
    /**
     * MCP over Streamable HTTP (stateless): the service’s tools, each needing the scope of the route it calls
     *
     * One JSON-RPC message per POST, answered with JSON (the `Accept` header must list JSON and SSE, else 406). Protocol 2026-07-28: each request carries its version and client in `_meta` and the `MCP-Protocol-Version`, `Mcp-Method` (and `Mcp-Name`) headers, with no handshake (`server/discover`, `tools/list`, `tools/call`). Protocol 2025-11-25 down to 2024-11-05, as the client asks in `initialize` (then `tools/list`, `tools/call`, `ping`, `logging/setLevel`, notifications). Stateless: any instance answers any request. A tool runs its route with the request’s key, so the key needs that route’s scope; a refused call is a tool result with `isError: true` and the route’s answer. A malformed body is a JSON-RPC error (400), never a 500. docs/guide/mcp.md.
     *
     * Scope: `ingest` or `read` or `admin`.
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
        401: ObserveError;
        403: JsonRpcError;
        406: JsonRpcError;
        413: ObserveError;
        415: JsonRpcError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
  "/v1/traces": {
    /**
     * OTLP/HTTP trace export: spans become events (protobuf or JSON, gzip or not)
     *
     * Body: an OTLP ExportTraceServiceRequest, `application/x-protobuf` or `application/json`, optionally `Content-Encoding: gzip`. The answer is an ExportTraceServiceResponse in the encoding of the request; spans refused by validation are counted in partialSuccess, the others are stored in one transaction. A span already stored is acknowledged, not stored again. 400 for a body that does not decode (protobuf, JSON or gzip); 413 past `BODY_LIMIT_BYTES` as sent or once gunzipped. docs/guide/opentelemetry.md.
     *
     * Scope: `ingest`.
     */
    post: {
      params: Record<string, never>;
      query: Record<string, never>;
      body: {
        [key: string]: unknown;
      };
      bodyRequired: true;
      responses: {
        200: ExportTraceServiceResponse;
        400: ObserveError;
        401: ObserveError;
        403: ObserveError;
        413: ObserveError;
        415: ObserveError;
        500: ObserveError;
        503: ObserveError;
      };
    };
  };
}
