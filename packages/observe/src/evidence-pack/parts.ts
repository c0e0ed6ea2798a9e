/**
 * The parts of an evidence pack (docs/audit.md, "Evidence packs"): a registry of builders, each
 * reading its part of the period from the services. A new kind of evidence is one more entry of
 * EVIDENCE_PARTS (and a line of controls.json naming the controls it supports).
 */
import controlsData from './controls.json' with { type: 'json' };

/** One service the pack reads: GET (and POST) JSON with its API key. */
export interface EvidenceService {
  /** `observe` or `gate`. */
  name: 'observe' | 'gate';
  url: string;
  get(path: string): Promise<unknown>;
  post(path: string, body: unknown): Promise<unknown>;
}

export interface EvidenceContext {
  from: string;
  to: string;
  /** --agent: only these agents' oversight records, incidents and sessions (empty: every agent). */
  agents: readonly string[];
  /** The checkpoint interval the services are configured with (ms): longer gaps are reported. */
  intervalMs: number;
  observe: EvidenceService | undefined;
  gate: EvidenceService | undefined;
  /** The parts built so far, by name (a builder may read an earlier one). */
  built: ReadonlyMap<string, unknown>;
}

export interface EvidencePart {
  /** The part's name, as the manifest and every finding call it. */
  name: string;
  /** Its key in controls.json. */
  control: string;
  title: string;
  /** What it holds (the report prints it). */
  describe: string;
  build(context: EvidenceContext): Promise<unknown>;
}

function query(values: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value !== undefined) params.set(key, String(value));
  return params.toString();
}

function inPeriod(context: EvidenceContext, timestamp: unknown): boolean {
  if (typeof timestamp !== 'string') return false;
  const at = Date.parse(timestamp);
  return at >= Date.parse(context.from) && at <= Date.parse(context.to);
}

/** Pages an offset-paged list (`{<key>: [...], hasMore}` or a bare array) to its end. */
async function allPages(service: EvidenceService, path: string, key: string | undefined, params: Record<string, string | number | undefined>) {
  const rows: Record<string, unknown>[] = [];
  for (let offset = 0; ;) {
    const answer = await service.get(`${path}?${query({ ...params, limit: 500, offset })}`);
    const page = (key === undefined ? answer : (answer as Record<string, unknown>)[key]) as Record<string, unknown>[];
    rows.push(...page);
    offset += page.length;
    const more = key === undefined ? page.length === 500 : (answer as { hasMore?: boolean }).hasMore === true;
    if (!more || page.length === 0) return rows;
  }
}

/** Pages a cursor-paged list (`{entries, nextCursor}`) to its end. */
async function allCursorPages(service: EvidenceService, path: string, params: Record<string, string | undefined>) {
  const rows: unknown[] = [];
  for (let cursor: string | undefined; ;) {
    const answer = (await service.get(`${path}?${query({ ...params, cursor })}`)) as { entries: unknown[]; nextCursor: string | null };
    rows.push(...answer.entries);
    if (answer.nextCursor === null) return rows;
    cursor = answer.nextCursor;
  }
}

/** A key's certificate by the key it replaced (a rotation), as GET /api/audit/public-key lists it. */
interface KeyCertificate {
  leafIndex: number;
  body: string;
  signature: string;
}

/** A checkpoint as GET /api/audit/checkpoints lists it. */
export interface ListedCheckpoint {
  checkpoint: { treeSize: number; rootHash: string; timestamp: string; keyId: string; signature: string };
  note: string | null;
  cosignatures: string[];
}

/** The checkpoints part of one service: its keys, its checkpoints, and the consistency proof of each from the one before. */
export interface CheckpointsPart {
  service: string;
  log: string;
  /** The log's keys as GET /api/audit/public-key lists them, each with the certificate of the key it replaced (a rotation), or null. */
  keys: { keyId: string; publicKey: string; certificate: KeyCertificate | null }[];
  checkpoints: ListedCheckpoint[];
  truncated: boolean;
  consistency: { from: number; to: number; proof: string[] }[];
}

function checkpointsPart(name: 'observe' | 'gate'): EvidencePart {
  return {
    name: `checkpoints-${name}`,
    control: 'checkpoints',
    title: `Checkpoints (${name})`,
    describe: `The signed checkpoints of the ${name} audit log in the period (and the last one before it), with their C2SP notes, witness cosignatures, and the consistency proof of each from the one before.`,
    async build(context) {
      const service = context[name];
      if (service === undefined) return null;
      const keys = (await service.get('/api/audit/public-key')) as { log: string; keys: { keyId: string; publicKey: string; certificate?: KeyCertificate }[] };
      const listed = (await service.get(`/api/audit/checkpoints?${query({ from: context.from, to: context.to })}`)) as {
        checkpoints: ListedCheckpoint[];
        truncated: boolean;
      };
      const consistency = [];
      for (let i = 1; i < listed.checkpoints.length; i++) {
        const from = listed.checkpoints[i - 1]!.checkpoint.treeSize;
        const to = listed.checkpoints[i]!.checkpoint.treeSize;
        consistency.push((await service.get(`/api/audit/consistency?${query({ from, to })}`)) as { from: number; to: number; proof: string[] });
      }
      const part: CheckpointsPart = {
        service: name,
        log: keys.log,
        keys: keys.keys.map(({ keyId, publicKey, certificate }) => ({ keyId, publicKey, certificate: certificate ?? null })),
        checkpoints: listed.checkpoints,
        truncated: listed.truncated,
        consistency,
      };
      return part;
    },
  };
}

function continuityOf(context: EvidenceContext, part: CheckpointsPart | null | undefined) {
  if (part == null) return null;
  const within = part.checkpoints.filter((listed) => inPeriod(context, listed.checkpoint.timestamp));
  const times = [context.from, ...within.map((listed) => listed.checkpoint.timestamp), context.to].map((t) => Date.parse(t));
  const gaps = [];
  for (let i = 1; i < times.length; i++) {
    if (times[i]! - times[i - 1]! > context.intervalMs) {
      gaps.push({ from: new Date(times[i - 1]!).toISOString(), to: new Date(times[i]!).toISOString(), ms: times[i]! - times[i - 1]! });
    }
  }
  const intervals = within.slice(1).map((listed, i) => Date.parse(listed.checkpoint.timestamp) - Date.parse(within[i]!.checkpoint.timestamp));
  return {
    checkpoints: within.length,
    first: within[0]?.checkpoint.timestamp ?? null,
    last: within.at(-1)?.checkpoint.timestamp ?? null,
    longestIntervalMs: intervals.length === 0 ? null : Math.max(...intervals),
    gaps,
    unwitnessed: within.filter((listed) => listed.cosignatures.length === 0).map((listed) => listed.checkpoint.treeSize),
    truncated: part.truncated,
  };
}

/** The agents to read one by one (each list filters by one agent on the server), or one unfiltered read. */
const agentFilters = (context: EvidenceContext): (string | undefined)[] => (context.agents.length === 0 ? [undefined] : [...context.agents]);

/** `work` over every item, at most `width` at a time, the answers in the items' order. */
async function inParallel<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const answers: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      answers[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return answers;
}

/** Requests read at once from the gate: each is two reads (its detail with its receipt, and its trail). */
const REQUEST_READS_IN_FLIGHT = 8;

async function oversight(context: EvidenceContext) {
  const gate = context.gate;
  if (gate === undefined) return null;
  // The gate filters by creation time and agent (from an index each): only the period's requests are read.
  const listed: Record<string, unknown>[] = [];
  for (const agentId of agentFilters(context))
    listed.push(...(await allPages(gate, '/api/requests', undefined, { from: context.from, to: context.to, agentId })));
  const requests = await inParallel(listed, REQUEST_READS_IN_FLIGHT, async (row) => {
    const id = encodeURIComponent(String(row.id));
    const [request, audit] = (await Promise.all([gate.get(`/api/requests/${id}`), gate.get(`/api/requests/${id}/audit`)])) as [
      Record<string, unknown>,
      Record<string, unknown>[],
    ];
    return { request, audit, receipt: request.receipt ?? null };
  });
  // Every escalation of those requests (its `escalated` audit entry: the tier reached, the new deadline, who was told).
  const escalations = requests.flatMap(({ request, audit }) =>
    audit
      .filter((entry) => entry.event === 'escalated')
      .map((entry) => ({ requestId: request.id, action: request.action, timestamp: entry.timestamp, actor: entry.actor, details: entry.details ?? null })),
  );
  return { requests, escalations };
}

async function incidents(context: EvidenceContext) {
  const observe = context.observe;
  if (observe === undefined) return null;
  const period = { from: context.from, to: context.to };
  const guardrailBreaches = [];
  const errorSessions = [];
  for (const agentId of agentFilters(context)) {
    guardrailBreaches.push(...(await allPages(observe, '/api/guardrails/history', 'triggers', { ...period, agentId })));
    errorSessions.push(...(await allPages(observe, '/api/sessions', 'sessions', { status: 'error', ...period, agentId })));
  }
  // An alert rule watches the fleet's figures, not one agent's: every alert of the period is kept.
  const firedAlerts = await allPages(observe, '/api/alerts/history', 'entries', period);
  return { guardrailBreaches, firedAlerts, errorSessions };
}

function changesPart(name: 'observe' | 'gate'): EvidencePart {
  return {
    name: `changes-${name}`,
    control: 'changes',
    title: `Administrative changes (${name})`,
    describe: `Every administrative change of ${name} in the period (GET /api/audit/changes): who changed what, with the API key behind the actor, before and after.`,
    async build(context) {
      const service = context[name];
      if (service === undefined) return null;
      return { service: name, entries: await allCursorPages(service, '/api/audit/changes', { from: context.from, to: context.to }) };
    },
  };
}

/** What the inventory keeps of an API key: never its secret (an allowlist of members). */
const KEY_MEMBERS = ['id', 'name', 'prefix', 'scopes', 'createdAt', 'lastUsedAt', 'revokedAt', 'revoked', 'expiresAt', 'rateLimit'];

function keysOf(answer: unknown): Record<string, unknown>[] {
  const rows = (Array.isArray(answer) ? answer : ((answer as { keys?: unknown[] }).keys ?? [])) as Record<string, unknown>[];
  return rows.map((row) => Object.fromEntries(KEY_MEMBERS.filter((member) => member in row).map((member) => [member, row[member]])));
}

function byScope(keys: Record<string, unknown>[]): Record<string, string[]> {
  const scopes: Record<string, string[]> = {};
  for (const key of keys) {
    for (const scope of Array.isArray(key.scopes) ? (key.scopes as string[]) : ['(all)']) (scopes[scope] ??= []).push(String(key.name ?? key.id));
  }
  return scopes;
}

async function inventory(context: EvidenceContext) {
  const { observe, gate } = context;
  const period = { from: context.from, to: context.to };
  const agents = observe === undefined ? null : ((await observe.get('/api/agents')) as Record<string, unknown>);
  // Weekly buckets: the inventory needs the models used, and a period of years stays within the route's bucket limit.
  const models = observe === undefined ? null : await observe.get(`/api/analytics/llm?${query({ ...period, granularity: 'week' })}`);
  const tools = observe === undefined ? null : await observe.get(`/api/analytics/tools?${query(period)}`);
  const observeKeys = observe === undefined ? null : keysOf(await observe.get('/api/keys'));
  const gateKeys = gate === undefined ? null : keysOf(await gate.get('/api/api-keys'));
  return {
    agents,
    models,
    tools,
    keys: {
      observe: observeKeys === null ? null : { keys: observeKeys, byScope: byScope(observeKeys) },
      gate: gateKeys === null ? null : { keys: gateKeys, byScope: byScope(gateKeys) },
    },
  };
}

/** The registry: built in this order, each into `parts/<name>.json`. */
export const EVIDENCE_PARTS: readonly EvidencePart[] = [
  checkpointsPart('observe'),
  checkpointsPart('gate'),
  {
    name: 'continuity',
    control: 'continuity',
    title: 'Continuity',
    describe:
      'Per log: how many checkpoints were signed in the period, the longest interval between two, every gap longer than the configured checkpoint interval (--interval-ms), and the checkpoints no witness cosigned.',
    async build(context) {
      return {
        intervalMs: context.intervalMs,
        observe: continuityOf(context, context.built.get('checkpoints-observe') as CheckpointsPart | null),
        gate: continuityOf(context, context.built.get('checkpoints-gate') as CheckpointsPart | null),
      };
    },
  },
  {
    name: 'oversight',
    control: 'oversight',
    title: 'Human oversight',
    describe:
      "Every gate request created in the period: the request, its audit trail (decisions with the decider's identity, redemptions, escalations), and its receipt; and every escalation of those requests (the tier reached, its new deadline, who was told).",
    build: oversight,
  },
  {
    name: 'incidents',
    control: 'incidents',
    title: 'Incidents',
    describe: 'Guardrail breaches and fired alerts of the period, and the sessions that ended in error.',
    build: incidents,
  },
  changesPart('observe'),
  changesPart('gate'),
  {
    name: 'retention',
    control: 'retention',
    title: 'Retention and deletion receipts',
    describe:
      "The signed retention tombstones of the period (each deleted chain's receipt, signed by the audit key and logged as a leaf), and both services' erasure receipts (DELETE /api/subjects/:id: each erasure leaf, naming the subject's keyed hash, the reason, the requester and every erased event, or on the gate every erased request and audit entry, by id and hash, with the log key's signature).",
    async build(context) {
      const period = query({ from: context.from, to: context.to });
      return {
        observe: context.observe === undefined ? null : await context.observe.get(`/api/audit/tombstones?${period}`),
        gate: context.gate === undefined ? null : await context.gate.get(`/api/audit/tombstones?${period}`),
        erasures: context.observe === undefined ? null : ((await context.observe.get(`/api/audit/erasures?${period}`)) as { erasures: unknown[] }).erasures,
        gateErasures: context.gate === undefined ? null : ((await context.gate.get(`/api/audit/erasures?${period}`)) as { erasures: unknown[] }).erasures,
      };
    },
  },
  {
    name: 'inventory',
    control: 'inventory',
    title: 'Inventory',
    describe: 'Agents, the models and tools used in the period, and the API keys of each service by scope (names and scopes only: never a secret).',
    build: inventory,
  },
  {
    name: 'controls',
    control: 'controls',
    title: 'Controls matrix',
    describe: 'Each part mapped to the EU AI Act, ISO/IEC 42001 Annex A, SOC 2 and NIST AI RMF controls it supports (controls.json).',
    async build() {
      return {
        about: controlsData.about,
        frameworks: controlsData.frameworks,
        parts: EVIDENCE_PARTS.filter((part) => part.control in controlsData.parts).map((part) => ({
          part: part.name,
          controls: controlsData.parts[part.control as keyof typeof controlsData.parts],
        })),
      };
    },
  },
];
