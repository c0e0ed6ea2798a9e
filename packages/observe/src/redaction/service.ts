import { MaskFailure, Masker, toIso, type ChangeActor, type MaskSpec } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { payloadSchemas, type IncomingEvent } from '../events/index.ts';
import { changedDefinition, changeRuleRecorded, type RuleTable } from '../rules/index.ts';
import { ruleDefinitionSchema, type CreateRuleBody, type DryRunBody, type RuleDefinition, type UpdateRuleBody } from './schemas.ts';
import {
  deleteRule,
  findRule,
  insertRule,
  listEnabledRules,
  lockRule,
  matcherOf,
  recentEvents,
  REDACTION_RULE_RESOURCE,
  toRuleOut,
  writeRule,
  type StoredRule,
} from './store.ts';

/** Where an event records the rules that fired on it: under its metadata, so inside its chain hash. */
export const REDACTIONS_FIELD = 'redactions';

/**
 * How long the admin rules are used before they are read again: a change through another instance
 * sharing the database applies here within it (a change through this one applies at once).
 */
const RULES_MAX_AGE_MS = 1000;

const REDACTION_RULES: RuleTable<StoredRule, RuleDefinition> = { resource: REDACTION_RULE_RESOURCE, lock: lockRule, write: writeRule, toOut: toRuleOut };

function definitionOf(stored: StoredRule): RuleDefinition {
  const { id: _id, createdAt: _created, updatedAt: _updated, ...definition } = stored;
  return definition;
}

type PayloadSchemas = typeof payloadSchemas;

/** One entry of `metadata.redactions`: a rule that fired (a detector's name or a rule's id) and how often. */
interface Redaction {
  rule: string;
  count: number;
}

const redactionsOf = (counts: readonly { id: string; count: number }[]): Redaction[] => counts.map(({ id, count }) => ({ rule: id, count }));

/**
 * The redaction of every event before it is hashed (EventAppender.beforeHash): the configured rules
 * and detectors (REDACTION_*) with the admin rules. Fails closed: a rule that fails refuses the batch.
 */
export class EventRedaction {
  private redactor: Masker;
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | null = null;

  constructor(private readonly ctx: ObserveContext) {
    this.redactor = this.compile([]);
  }

  private compile(adminRules: readonly MaskSpec[]): Masker {
    const { specs, detectors, hmacKey } = this.ctx.config.masking;
    return new Masker({ specs: [...specs, ...adminRules], detectors, hmacKey });
  }

  /** Reads the admin rules again when they are older than RULES_MAX_AGE_MS (one read at a time). */
  private async current(): Promise<Masker> {
    if (this.ctx.clock.now() - this.loadedAt >= RULES_MAX_AGE_MS) {
      this.loading ??= this.reload().finally(() => (this.loading = null));
      await this.loading;
    }
    return this.redactor;
  }

  private async reload(): Promise<void> {
    const loadedAt = this.ctx.clock.now();
    const rules = await listEnabledRules(this.ctx.database);
    this.redactor = this.compile(rules.map(matcherOf));
    this.loadedAt = loadedAt;
  }

  /** After a change through this instance: the next batch reads the rules again. */
  invalidate(): void {
    this.loadedAt = Number.NEGATIVE_INFINITY;
  }

  /** The batch as it is to be stored; throws 422 redaction_failed (the whole batch refused) when a rule fails on any event. */
  async redactBatch(events: readonly IncomingEvent[]): Promise<readonly IncomingEvent[]> {
    for (let index = 0; index < events.length; index++) {
      if (events[index]!.metadata?.[REDACTIONS_FIELD] !== undefined) {
        throw observeError('redactionFieldReserved', undefined, [
          { path: `events.${index}.metadata.${REDACTIONS_FIELD}`, message: 'is written by the server only' },
        ]);
      }
    }
    const redactor = await this.current();
    if (!redactor.active) return events;
    let out: IncomingEvent[] | undefined;
    for (let index = 0; index < events.length; index++) {
      const event = events[index]!;
      const redacted = redactEvent(redactor, event, index);
      if (redacted !== event) (out ??= events.slice())[index] = redacted;
    }
    return out ?? events;
  }

  // ---- admin rules ----

  async create(body: CreateRuleBody, actor: ChangeActor): Promise<StoredRule> {
    const rule = await insertRule(this.ctx.database, body, actor, this.ctx.clock.now());
    this.invalidate();
    return rule;
  }

  async update(id: string, changes: UpdateRuleBody, actor: ChangeActor): Promise<boolean> {
    const changed = await changeRuleRecorded(
      this.ctx,
      REDACTION_RULES,
      id,
      (stored) => changedDefinition(definitionOf(stored), changes as Partial<RuleDefinition>, ruleDefinitionSchema),
      actor,
    );
    this.invalidate();
    return changed;
  }

  async remove(id: string, actor: ChangeActor): Promise<boolean> {
    const removed = await deleteRule(this.ctx.database, id, actor, this.ctx.clock.now());
    this.invalidate();
    return removed;
  }

  /** What the rule (or detectors) would change on the most recent events, changing nothing. */
  async dryRun(body: DryRunBody) {
    const rules: MaskSpec[] = [];
    if (body.rule !== undefined) rules.push({ ...body.rule, id: 'dry-run' });
    if (body.ruleId !== undefined) {
      const stored = await findRule(this.ctx.database, body.ruleId);
      if (stored === undefined) throw observeError('redactionRuleNotFound');
      rules.push(matcherOf(stored));
    }
    const redactor = new Masker({ specs: rules, detectors: body.detectors ?? [], hmacKey: this.ctx.config.masking.hmacKey });
    const rows = await this.ctx.sealer.open(await recentEvents(this.ctx.database, body.limit));
    const events = [];
    for (const row of rows) {
      const { roots, counts } = redactor.mask({
        payload: JSON.parse(row.payload) as Record<string, unknown>,
        metadata: JSON.parse(row.metadata) as Record<string, unknown>,
      });
      if (counts.length === 0) continue;
      events.push({
        id: row.id,
        sessionId: row.session_id,
        timestamp: toIso(Number(row.ts)),
        redactions: redactionsOf(counts),
        payload: roots.payload,
        metadata: roots.metadata,
      });
    }
    return { examined: rows.length, matched: events.length, events };
  }
}

/** One event redacted (the same object when nothing fired), its metadata naming the rules that fired. */
function redactEvent(redactor: Masker, event: IncomingEvent, index: number): IncomingEvent {
  let roots: { payload: Record<string, unknown>; metadata: Record<string, unknown> };
  let redactions: Redaction[];
  try {
    const masked = redactor.mask({ payload: event.payload, metadata: event.metadata ?? {} });
    roots = masked.roots;
    redactions = redactionsOf(masked.counts);
  } catch (error) {
    // Whatever failed (a rule, or the walk itself on a pathological value), the event is not stored.
    throw error instanceof MaskFailure ? failed(index, error.id, error.message) : failed(index, '(all)', (error as Error).message);
  }
  if (redactions.length === 0) return event;
  // A marker where the event type wants a number, an enum value or a bounded text: refused, never stored raw.
  const schema = (payloadSchemas as Partial<PayloadSchemas>)[event.eventType as keyof PayloadSchemas];
  const misfit = (payload: Record<string, unknown>) => {
    const checked = schema?.safeParse(payload);
    return checked === undefined || checked.success ? undefined : checked.error.issues[0]!;
  };
  const issue = misfit(roots.payload);
  if (issue !== undefined) {
    // The rule to name: the first that breaks the payload alone.
    const culprit = redactions.find(({ rule }) => misfit(redactor.only(rule).mask({ payload: event.payload }).roots.payload) !== undefined);
    const where = issue.path.map(String).join('.') || 'payload';
    throw failed(
      index,
      culprit?.rule ?? redactions.map((r) => r.rule).join(', '),
      `the redacted payload no longer fits ${event.eventType}: ${where}: ${issue.message}`,
    );
  }
  return { ...event, payload: roots.payload, metadata: { ...roots.metadata, [REDACTIONS_FIELD]: redactions } };
}

function failed(index: number, rule: string, reason: string) {
  return observeError('redactionFailed', undefined, [{ path: `events.${index}`, message: `rule ${rule}: ${reason}` }]);
}
