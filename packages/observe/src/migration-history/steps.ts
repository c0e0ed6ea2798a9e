// Observe's migration steps 0001–0023 as they shipped: frozen history. A step keeps doing what it did
// when it shipped even after the feature's live code changes, so these steps import no feature code:
// what they ran of a feature's code is copied beside them (the other files of this folder), as that
// code was then. Steps from 0024 on live in the feature that owns their tables (src/migrations.ts
// collects them).
import {
  createAdminChangeTable,
  createApiKeyTable,
  createFullTextIndex,
  createLeaseTable,
  epochMsType,
  floatType,
  jsonArrayLength,
  jsonText,
  storeHashesAsBytes,
  withDeliveryColumns,
  type MigrationStep,
} from '@vigil/platform';
import { sql } from 'kysely';
import { backfillRollups, backfillSketches, createLatencySketchTable, createRollupTable } from './analytics.ts';
import { createAuditLogTablesV1, upgradeAuditLog } from './audit-log.ts';
import { COMPLEX_MIN_INPUT_TOKENS, COMPLEX_MIN_TOOLS, createStoreTotals, SIMPLE_MAX_INPUT_TOKENS, SYSTEM_AGENT_ID } from './events.ts';
import { compactEmbeddings, EMBEDDED_EVENT_TYPES } from './recall.ts';

/** The id prefix of an alert rule's session (alerts/evaluator.ts). */
const ALERT_SESSION_PREFIX = 'alert:';

export const observeHistory: Record<string, MigrationStep> = {
  async '0001_event_store'(db, dialect) {
    await db.schema
      .createTable('events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('severity', 'text', (c) => c.notNull())
      .addColumn('ts', epochMsType, (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('prev_hash', 'text')
      .addColumn('hash', 'text', (c) => c.notNull())
      .addColumn('is_error', 'integer', (c) => c.notNull())
      .addColumn('cost_usd', floatType)
      .addColumn('duration_ms', floatType)
      .addColumn('latency_ms', floatType)
      .addColumn('tool_name', 'text')
      .addColumn('call_id', 'text')
      .addColumn('provider', 'text')
      .addColumn('model', 'text')
      .addColumn('input_tokens', epochMsType)
      .addColumn('output_tokens', epochMsType)
      .execute();
    // Chain order (seq) is guaranteed by the per-session lock and checked by verification; this
    // index serves per-session reads in timeline order.
    await db.schema.createIndex('events_ts').on('events').columns(['ts', 'id']).execute();
    await db.schema.createIndex('events_session_ts').on('events').columns(['session_id', 'ts', 'seq']).execute();
    await db.schema.createIndex('events_agent_ts').on('events').columns(['agent_id', 'ts']).execute();
    await db.schema.createIndex('events_type_ts').on('events').columns(['event_type', 'ts']).execute();
    await db.schema.createIndex('events_severity_ts').on('events').columns(['severity', 'ts']).execute();
    await createFullTextIndex(db, dialect, 'events', 'payload');

    await db.schema
      .createTable('sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('agent_name', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('started_at', epochMsType, (c) => c.notNull())
      .addColumn('ended_at', epochMsType)
      .addColumn('last_event_at', epochMsType, (c) => c.notNull())
      .addColumn('event_count', 'integer', (c) => c.notNull())
      .addColumn('tool_call_count', 'integer', (c) => c.notNull())
      .addColumn('error_count', 'integer', (c) => c.notNull())
      .addColumn('total_cost_usd', floatType, (c) => c.notNull())
      .addColumn('tags', 'text', (c) => c.notNull())
      .addColumn('last_seq', 'integer', (c) => c.notNull())
      .addColumn('last_hash', 'text')
      .execute();
    await db.schema.createIndex('sessions_started').on('sessions').columns(['started_at', 'id']).execute();
    await db.schema.createIndex('sessions_agent_started').on('sessions').columns(['agent_id', 'started_at']).execute();
    await db.schema.createIndex('sessions_status_started').on('sessions').columns(['status', 'started_at']).execute();
    await db.schema.createIndex('sessions_last_event').on('sessions').columns(['last_event_at']).execute();

    await db.schema
      .createTable('session_tags')
      .addColumn('tag', 'text', (c) => c.notNull())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('session_tags_pk', ['tag', 'session_id'])
      .execute();
    await db.schema.createIndex('session_tags_session').on('session_tags').columns(['session_id']).execute();

    await db.schema
      .createTable('agents')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('first_seen_at', epochMsType, (c) => c.notNull())
      .addColumn('last_seen_at', epochMsType, (c) => c.notNull())
      .addColumn('session_count', 'integer', (c) => c.notNull())
      .addColumn('paused_at', epochMsType)
      .addColumn('pause_reason', 'text')
      .addColumn('model_override', 'text')
      .addColumn('approval_policy_id', 'text')
      .execute();

    await createApiKeyTable(db);

    await db.schema
      .createTable('settings')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();

    await createLeaseTable(db);
  },

  async '0002_alerts'(db) {
    await db.schema
      .createTable('alert_rules')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('condition', 'text', (c) => c.notNull())
      .addColumn('threshold', floatType, (c) => c.notNull())
      .addColumn('window_minutes', 'integer', (c) => c.notNull())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('notify_channels', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('alert_rules_created').on('alert_rules').columns(['created_at', 'id']).execute();

    await db.schema
      .createTable('alert_history')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('rule_id', 'text', (c) => c.notNull())
      .addColumn('triggered_at', epochMsType, (c) => c.notNull())
      .addColumn('resolved_at', epochMsType)
      .addColumn('resolved_by', 'text')
      .addColumn('current_value', floatType, (c) => c.notNull())
      .addColumn('threshold', floatType, (c) => c.notNull())
      .addColumn('notified', 'integer', (c) => c.notNull())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('summary', 'text', (c) => c.notNull())
      .addColumn('triggered_event_id', 'text')
      .addColumn('resolved_event_id', 'text')
      .execute();
    await db.schema.createIndex('alert_history_rule_triggered').on('alert_history').columns(['rule_id', 'triggered_at']).execute();
    await db.schema.createIndex('alert_history_triggered').on('alert_history').columns(['triggered_at', 'id']).execute();
    // At most one open entry per rule, enforced by the database (and the index that finds it).
    await db.schema.createIndex('alert_history_open').on('alert_history').column('rule_id').unique().where(sql.ref('resolved_at'), 'is', null).execute();

    await withDeliveryColumns(
      db.schema
        .createTable('alert_deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('history_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull()),
    ).execute();
    await db.schema.createIndex('alert_deliveries_due').on('alert_deliveries').columns(['status', 'next_attempt_at']).execute();
    await db.schema.createIndex('alert_deliveries_history').on('alert_deliveries').columns(['history_id', 'kind']).execute();
  },

  async '0003_event_rollups'(db, dialect) {
    // LLM calls get their complexity tier and finish reason as columns (events/derive.ts), so the
    // rollups can carry them and optimize reads no JSON.
    await db.schema.alterTable('events').addColumn('complexity_tier', 'text').execute();
    await db.schema.alterTable('events').addColumn('finish_reason', 'text').execute();
    const tools = jsonArrayLength(dialect, 'payload', 'toolCalls');
    const input = sql`coalesce(input_tokens, 0)`;
    await db
      .updateTable('events')
      .set({
        complexity_tier: sql`case
          when ${input} < ${sql.lit(SIMPLE_MAX_INPUT_TOKENS)} and ${tools} = 0 then 'simple'
          when ${input} > ${sql.lit(COMPLEX_MIN_INPUT_TOKENS)} or ${tools} >= ${sql.lit(COMPLEX_MIN_TOOLS)} then 'complex'
          else 'moderate' end`,
        finish_reason: jsonText(dialect, 'payload', 'finishReason'),
      })
      .where('event_type', '=', 'llm_response')
      .execute();
    await createRollupTable(db);
    await backfillRollups(db);
  },

  async '0004_health_snapshots'(db) {
    // One row per agent and UTC day: the 7-day health the first time it was queried that day.
    await db.schema
      .createTable('health_snapshots')
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('date', 'text', (c) => c.notNull())
      .addColumn('overall_score', floatType, (c) => c.notNull())
      .addColumn('error_rate_score', floatType, (c) => c.notNull())
      .addColumn('cost_efficiency_score', floatType, (c) => c.notNull())
      .addColumn('tool_success_score', floatType, (c) => c.notNull())
      .addColumn('latency_score', floatType, (c) => c.notNull())
      .addColumn('completion_rate_score', floatType, (c) => c.notNull())
      .addColumn('session_count', 'integer', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addPrimaryKeyConstraint('health_snapshots_pk', ['agent_id', 'date'])
      .execute();
    await db.schema.createIndex('health_snapshots_date').on('health_snapshots').columns(['date', 'agent_id']).execute();
  },

  async '0005_embeddings'(db, dialect) {
    // Work queue of recall (recall/worker.ts): filled by the ingest transaction, drained after commit.
    await db.schema
      .createTable('embedding_queue')
      .addColumn('source_type', 'text', (c) => c.notNull())
      .addColumn('source_id', 'text', (c) => c.notNull())
      .addColumn('enqueued_at', epochMsType, (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('next_attempt_at', epochMsType, (c) => c.notNull())
      .addColumn('claimed_until', epochMsType)
      .addColumn('last_error', 'text')
      .addColumn('generation', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('embedding_queue_pk', ['source_type', 'source_id'])
      .execute();
    // Claims take the due rows of one source type in attempt order straight from this index.
    await db.schema.createIndex('embedding_queue_due').on('embedding_queue').columns(['source_type', 'next_attempt_at']).execute();

    await db.schema
      .createTable('embeddings')
      .addColumn('source_type', 'text', (c) => c.notNull())
      .addColumn('source_id', 'text', (c) => c.notNull())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text')
      .addColumn('ts', epochMsType, (c) => c.notNull())
      .addColumn('last_ts', epochMsType, (c) => c.notNull())
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('dims', 'integer', (c) => c.notNull())
      .addColumn('vector', dialect === 'sqlite' ? 'blob' : 'bytea', (c) => c.notNull())
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('updated_seq', epochMsType, (c) => c.notNull())
      .addColumn('deleted', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('embeddings_pk', ['source_type', 'source_id'])
      .execute();
    // The in-memory indexes read rows of one model past their watermark; results are read by key.
    // The agent and time filters of recall run in memory, so no SQL index serves them (each one
    // would only slow the worker's writes). Retention finds vectors by session; tombstones are
    // found by age for purging.
    await db.schema.createIndex('embeddings_model_seq').on('embeddings').columns(['model', 'updated_seq']).execute();
    await db.schema.createIndex('embeddings_session').on('embeddings').columns(['session_id', 'deleted']).execute();
    await db.schema.createIndex('embeddings_tombstones').on('embeddings').column('last_ts').where(sql.ref('deleted'), '=', 1).execute();

    await db.schema
      .createTable('embedding_meta')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('last_seq', epochMsType, (c) => c.notNull())
      .addColumn('purged_seq', epochMsType, (c) => c.notNull())
      .execute();
    await db.insertInto('embedding_meta').values({ id: 1, last_seq: 0, purged_seq: 0 }).execute();

    // History stored before this step is queued like new events (the worker drains it in the
    // background; it skips events without text, e.g. a session_ended without summary).
    const embedded = sql.join(EMBEDDED_EVENT_TYPES.map((t) => sql.lit(t)));
    await sql`insert into embedding_queue (source_type, source_id, enqueued_at, attempts, next_attempt_at, claimed_until, last_error, generation)
      select 'event', id, 0, 0, 0, null, null, 0 from events where event_type in (${embedded})`.execute(db);
    await sql`insert into embedding_queue (source_type, source_id, enqueued_at, attempts, next_attempt_at, claimed_until, last_error, generation)
      select 'session', id, 0, 0, 0, null, null, 0 from sessions`.execute(db);
  },

  async '0006_benchmarks'(db) {
    // A/B benchmarks (benchmarks/): variants are sessions carrying a tag; results are cached on completion.
    await db.schema
      .createTable('benchmarks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('agent_id', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('metrics', 'text', (c) => c.notNull())
      .addColumn('min_sessions_per_variant', 'integer', (c) => c.notNull())
      .addColumn('time_from', epochMsType)
      .addColumn('time_to', epochMsType)
      .addColumn('results', 'text')
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('benchmarks_status_created').on('benchmarks').columns(['status', 'created_at', 'id']).execute();
    await db.schema.createIndex('benchmarks_created').on('benchmarks').columns(['created_at', 'id']).execute();
    await db.schema.createIndex('benchmarks_agent').on('benchmarks').columns(['agent_id']).execute();

    await db.schema
      .createTable('benchmark_variants')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('benchmark_id', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('tag', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('agent_id', 'text')
      .execute();
    await db.schema.createIndex('benchmark_variants_benchmark').on('benchmark_variants').columns(['benchmark_id', 'position']).unique().execute();
    await db.schema.createIndex('benchmark_variants_agent').on('benchmark_variants').columns(['agent_id']).execute();
  },

  async '0007_guardrails'(db) {
    // Guardrail rules (guardrails/): evaluated after each ingest commit and by a sweep; triggers are kept after a rule is deleted.
    await db.schema
      .createTable('guardrail_rules')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('agent_id', 'text')
      .addColumn('condition_type', 'text', (c) => c.notNull())
      .addColumn('condition_config', 'text', (c) => c.notNull())
      .addColumn('action_type', 'text', (c) => c.notNull())
      .addColumn('action_config', 'text', (c) => c.notNull())
      .addColumn('cooldown_minutes', 'integer', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('dry_run', 'integer', (c) => c.notNull())
      .addColumn('trigger_count', 'integer', (c) => c.notNull())
      .addColumn('last_triggered_at', epochMsType)
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('guardrail_rules_created').on('guardrail_rules').columns(['created_at', 'id']).execute();
    await db.schema.createIndex('guardrail_rules_enabled').on('guardrail_rules').columns(['enabled', 'agent_id']).execute();

    await db.schema
      .createTable('guardrail_triggers')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('rule_id', 'text', (c) => c.notNull())
      .addColumn('rule_name', 'text', (c) => c.notNull())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('triggered_at', epochMsType, (c) => c.notNull())
      .addColumn('condition_type', 'text', (c) => c.notNull())
      .addColumn('current_value', floatType, (c) => c.notNull())
      .addColumn('threshold', floatType, (c) => c.notNull())
      .addColumn('action_type', 'text', (c) => c.notNull())
      .addColumn('dry_run', 'integer', (c) => c.notNull())
      .addColumn('action_result', 'text', (c) => c.notNull())
      .execute();
    // Cooldown lookups (latest trigger of a rule for an agent) and the rule's recent triggers.
    await db.schema.createIndex('guardrail_triggers_rule_agent').on('guardrail_triggers').columns(['rule_id', 'agent_id', 'triggered_at']).execute();
    await db.schema.createIndex('guardrail_triggers_rule').on('guardrail_triggers').columns(['rule_id', 'triggered_at', 'id']).execute();
    await db.schema.createIndex('guardrail_triggers_triggered').on('guardrail_triggers').columns(['triggered_at', 'id']).execute();
    await db.schema.createIndex('guardrail_triggers_agent').on('guardrail_triggers').columns(['agent_id', 'triggered_at', 'id']).execute();

    await withDeliveryColumns(
      db.schema
        .createTable('guardrail_deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('trigger_id', 'text', (c) => c.notNull()),
    ).execute();
    await db.schema.createIndex('guardrail_deliveries_due').on('guardrail_deliveries').columns(['status', 'next_attempt_at']).execute();
    await db.schema.createIndex('guardrail_deliveries_trigger').on('guardrail_deliveries').columns(['trigger_id']).execute();
  },

  async '0008_evals'(db) {
    // Compliance evaluations, saved evaluators, datasets and their runs (evals/).
    await db.schema
      .createTable('evaluators')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('rules', 'text')
      .addColumn('rubric', 'text')
      .addColumn('pass_threshold', floatType)
      .addColumn('model', 'text')
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('evaluators_created').on('evaluators').columns(['created_at', 'id']).execute();

    // Every billed call of the LLM judge; judge spend is the sum of its cost_usd.
    await db.schema
      .createTable('judge_calls')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('evaluator_id', 'text')
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('input_tokens', epochMsType, (c) => c.notNull())
      .addColumn('output_tokens', epochMsType, (c) => c.notNull())
      .addColumn('cost_usd', floatType, (c) => c.notNull())
      .addColumn('score', floatType)
      .addColumn('passed', 'integer')
      .addColumn('event_id', 'text')
      .addColumn('error', 'text')
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('judge_calls_session').on('judge_calls').columns(['session_id', 'created_at']).execute();

    await db.schema
      .createTable('datasets')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('case_count', 'integer', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('datasets_created').on('datasets').columns(['created_at', 'id']).execute();

    await db.schema
      .createTable('dataset_cases')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('dataset_id', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('input', 'text', (c) => c.notNull())
      .addColumn('expected', 'text')
      .execute();
    await db.schema.createIndex('dataset_cases_dataset').on('dataset_cases').columns(['dataset_id', 'position']).unique().execute();

    await db.schema
      .createTable('eval_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('dataset_id', 'text', (c) => c.notNull())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('webhook_url', 'text', (c) => c.notNull())
      .addColumn('evaluator_id', 'text')
      .addColumn('evaluator', 'text')
      .addColumn('case_timeout_ms', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('total_cases', 'integer', (c) => c.notNull())
      .addColumn('completed_cases', 'integer', (c) => c.notNull())
      .addColumn('passed_cases', 'integer', (c) => c.notNull())
      .addColumn('failed_cases', 'integer', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('finished_at', epochMsType)
      .execute();
    await db.schema.createIndex('eval_runs_dataset').on('eval_runs').columns(['dataset_id', 'created_at']).execute();

    await db.schema
      .createTable('eval_run_cases')
      .addColumn('run_id', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('case_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('claimed_until', epochMsType)
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('session_id', 'text')
      .addColumn('passed', 'integer')
      .addColumn('score', floatType)
      .addColumn('error', 'text')
      .addColumn('finished_at', epochMsType)
      .addPrimaryKeyConstraint('eval_run_cases_pk', ['run_id', 'position'])
      .execute();
    // The worker finds pending cases (of any run) in run and case order.
    await db.schema.createIndex('eval_run_cases_pending').on('eval_run_cases').columns(['status', 'run_id', 'position']).execute();
  },

  async '0009_rule_descriptions'(db) {
    // An optional free-text description of alert and guardrail rules (null when unset).
    await db.schema.alterTable('alert_rules').addColumn('description', 'text').execute();
    await db.schema.alterTable('guardrail_rules').addColumn('description', 'text').execute();
  },

  async '0010_key_scopes'(db) {
    // Existing keys keep null: full access, as before scopes existed (auth/scopes.ts).
    await db.schema.alterTable('api_keys').addColumn('scopes', 'text').execute();
  },

  async '0012_session_idle'(db) {
    // Where a session that never ended first went idle (sessions/figures.ts); older sessions keep
    // null and are measured up to their last event, as before.
    await db.schema.alterTable('sessions').addColumn('idle_at', epochMsType).execute();

    // Alert sessions created under the rule's agent move to the system agent. Only the session
    // rows and counters change: the events keep their agentId, which their chain hashes cover.
    const alertSessions = sql<boolean>`sessions.id in (select ${sql.lit(ALERT_SESSION_PREFIX)} || rule_id from alert_history) and sessions.agent_id <> ${SYSTEM_AGENT_ID}`;
    const owners = await db
      .selectFrom('sessions')
      .select(['agent_id', sql<number>`count(*)`.as('n'), sql<number>`min(started_at)`.as('first'), sql<number>`max(last_event_at)`.as('last')])
      .where(alertSessions)
      .groupBy('agent_id')
      .execute();
    // Events appended from here on (an open entry's alert_resolved, a repair) go to the system agent too.
    await db.updateTable('alert_history').set({ agent_id: SYSTEM_AGENT_ID }).where('agent_id', '<>', SYSTEM_AGENT_ID).execute();
    if (owners.length === 0) return;
    let moved = 0;
    for (const owner of owners) {
      moved += Number(owner.n);
      await db
        .updateTable('agents')
        .set({ session_count: sql`session_count - ${Number(owner.n)}` })
        .where('id', '=', owner.agent_id)
        .execute();
    }
    const first = Math.min(...owners.map((o) => Number(o.first)));
    const last = Math.max(...owners.map((o) => Number(o.last)));
    await db
      .insertInto('agents')
      .values({ id: SYSTEM_AGENT_ID, name: SYSTEM_AGENT_ID, first_seen_at: first, last_seen_at: last, session_count: moved })
      .onConflict((oc) =>
        oc.column('id').doUpdateSet({
          session_count: sql`agents.session_count + ${moved}`,
          first_seen_at: sql`case when agents.first_seen_at < ${first} then agents.first_seen_at else ${first} end`,
          last_seen_at: sql`case when agents.last_seen_at > ${last} then agents.last_seen_at else ${last} end`,
        }),
      )
      .execute();
    await db.updateTable('sessions').set({ agent_id: SYSTEM_AGENT_ID, agent_name: SYSTEM_AGENT_ID }).where(alertSessions).execute();
  },

  async '0011_stream'(db) {
    await db.schema
      .createTable('stream_log')
      .addColumn('pos', 'bigint', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('first_seq', 'integer', (c) => c.notNull())
      .addColumn('last_seq', 'integer', (c) => c.notNull())
      .addColumn('min_ts', epochMsType, (c) => c.notNull())
      .addColumn('max_ts', epochMsType, (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('stream_head')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('last_pos', 'bigint', (c) => c.notNull())
      .execute();
    await db.insertInto('stream_head').values({ id: 1, last_pos: 0 }).execute();
    await db.schema
      .createTable('stream_tokens')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('key_id', 'text')
      .addColumn('expires_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('stream_tokens_expires').on('stream_tokens').columns(['expires_at']).execute();
  },

  /** Every administrative change (API keys, alert rules, guardrails, settings) with its actor, before and after (platform/change-log.ts). */
  async '0013_admin_changes'(db) {
    await createAdminChangeTable(db);
  },

  /** Spans stored by OTLP ingest (otel/store.ts): a span sent twice is stored once. */
  async '0014_otel_spans'(db) {
    await db.schema
      .createTable('otel_spans')
      .addColumn('trace_id', 'text', (c) => c.notNull())
      .addColumn('span_id', 'text', (c) => c.notNull())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('ts', epochMsType, (c) => c.notNull())
      .addPrimaryKeyConstraint('otel_spans_pk', ['trace_id', 'span_id'])
      .execute();
    // The spans of a session (the tree, retention).
    await db.schema.createIndex('otel_spans_session').on('otel_spans').columns(['session_id', 'ts']).execute();
  },

  /** Hourly DDSketch bins of tool and LLM latencies, for percentiles over any range (analytics/latency.ts). */
  async '0015_latency_sketches'(db) {
    await createLatencySketchTable(db);
    await backfillSketches(db);
  },

  /** The audit log: a Merkle tree over every event's hash, and its signed checkpoints (audit-log/). */
  async '0016_audit_log'(db) {
    await createAuditLogTablesV1(db);
  },

  /**
   * The log in the platform's shape (leaves name their session), retention tombstones and witness
   * deliveries; events without a leaf (all of them on a database that 0016 just created) become leaves.
   */
  async '0017_audit_log_witnesses'(db) {
    await upgradeAuditLog(db);
  },

  /**
   * Every session's tool calls in seq order with the columns reflect reads of them (tool_sequences,
   * error_patterns' preceding tools): an index-only scan with no sort instead of a row lookup per
   * tool call and a sort of them all. (A partial index on tool calls alone would be smaller, but
   * SQLite's planner does not take it for these queries.)
   */
  async '0018_tool_call_order_index'(db) {
    await db.schema
      .createIndex('events_type_session_seq')
      .on('events')
      .columns(['event_type', 'session_id', 'seq', 'ts', 'tool_name', 'call_id', 'agent_id'])
      .execute();
  },

  async '0019_compact_embeddings'(db, dialect) {
    // Vectors as int8, events' rows without their copy of the event's text, no vectors for events
    // that are no longer embedded (recall.ts).
    await compactEmbeddings(db, dialect);
  },

  /**
   * Storage that carries no waste (docs/architecture.md#storage-footprint). Reflect's tool-call
   * index (0018) holds tool calls only: every query it serves names event_type 'tool_call', and the
   * other events' entries (three quarters of a typical mix, ~55 bytes per event) served none; the
   * leading event_type stays so that the planner matches it as it did the full index, with the
   * type bound as a parameter too. SQLite: the audit log's leaves are keyed by their index as the
   * table's rowid (`integer primary key`): a `bigint` key is a second copy of the index beside the
   * rowid, with a b-tree of its own (~18 bytes per event). PostgreSQL: retention deletes a day of
   * events at a time, so autovacuum is asked to reclaim the events' dead rows after 2 % of the
   * table changed (the default, 20 %, lets a 30-day retention pile up six days of dead rows).
   */
  async '0020_storage_footprint'(db, dialect) {
    await db.schema.dropIndex('events_type_session_seq').execute();
    await sql`create index events_tool_calls on events (event_type, session_id, seq, ts, tool_name, call_id, agent_id) where event_type = 'tool_call'`.execute(
      db,
    );
    if (dialect === 'postgres') {
      await sql`alter table events set (autovacuum_vacuum_scale_factor = 0.02)`.execute(db);
      return;
    }
    await sql`create table audit_log_leaves_by_rowid (idx integer primary key, item_id text not null, scope_id text, leaf_hash text not null)`.execute(db);
    await sql`insert into audit_log_leaves_by_rowid (idx, item_id, scope_id, leaf_hash) select idx, item_id, scope_id, leaf_hash from audit_log_leaves order by idx`.execute(
      db,
    );
    await db.schema.dropTable('audit_log_leaves').execute();
    await sql`alter table audit_log_leaves_by_rowid rename to audit_log_leaves`.execute(db);
    await db.schema.createIndex('audit_log_leaves_item').unique().on('audit_log_leaves').columns(['item_id']).execute();
  },

  /**
   * Per-session reflect state (reflect/state.ts), filled by its job from the stored events; the
   * job reads a session's error events through a partial index of error events by session (2–3 %
   * of the rows, so next to nothing on ingest) instead of every event of the session.
   */
  async '0021_reflect_state'(db) {
    await db.schema
      .createTable('reflect_sessions')
      .addColumn('session_id', 'text', (c) => c.primaryKey())
      .addColumn('head_hash', 'text', (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('agent_id', 'text')
      .addColumn('min_ts', epochMsType)
      .addColumn('max_ts', epochMsType)
      .execute();
    await db.schema
      .createTable('reflect_ngrams')
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('tools', 'text', (c) => c.notNull())
      .addColumn('frequency', 'integer', (c) => c.notNull())
      .addColumn('failed', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('reflect_ngrams_pk', ['session_id', 'tools'])
      .execute();
    await db.schema
      .createTable('reflect_errors')
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('pattern', 'text', (c) => c.notNull())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addColumn('first_ts', epochMsType, (c) => c.notNull())
      .addColumn('last_ts', epochMsType, (c) => c.notNull())
      .addPrimaryKeyConstraint('reflect_errors_pk', ['session_id', 'pattern'])
      .execute();
    await db.schema
      .createTable('reflect_preceding')
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('pattern', 'text', (c) => c.notNull())
      .addColumn('tools', 'text', (c) => c.notNull())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('reflect_preceding_pk', ['session_id', 'pattern', 'tools'])
      .execute();
    await db.schema.createIndex('events_session_errors').on('events').columns(['session_id', 'seq']).where(sql.ref('is_error'), '=', 1).execute();
  },

  /**
   * SHA-256 values stored as their 32 bytes instead of 64 hex characters (platform stored-hash.ts):
   * the events' hash and prev_hash and the audit log's leaves and stored nodes, 96 bytes less per
   * event (docs/architecture.md, "Storage footprint"). Every API, export and proof shows them in hex
   * as before; a value that was not a hash's hex keeps its own bytes, so a tampered row stays broken.
   */
  async '0022_binary_hashes'(db, dialect) {
    await storeHashesAsBytes(db, dialect, 'events', ['hash', 'prev_hash']);
    await storeHashesAsBytes(db, dialect, 'audit_log_leaves', ['leaf_hash']);
    await storeHashesAsBytes(db, dialect, 'audit_log_nodes', ['hash']);
  },

  /**
   * GET /api/stats reads one row instead of counting (docs/architecture.md#read-paths): the event
   * store's totals, kept by ingest and retention, and the judge spend, kept with each judge call;
   * both filled here from the rows stored.
   */
  async '0023_stats_totals'(db) {
    await createStoreTotals(db);
    await db.schema
      .createTable('judge_spend')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('usd', floatType, (c) => c.notNull())
      .execute();
    await db
      .insertInto('judge_spend')
      .columns(['id', 'usd'])
      .expression(
        db.selectNoFrom((eb) => [
          eb.lit(1).as('id'),
          eb
            .selectFrom('judge_calls')
            .select((j) => j.fn.coalesce(j.fn.sum<number>('cost_usd'), j.lit(0)).as('usd'))
            .as('usd'),
        ]),
      )
      .execute();
  },
};
