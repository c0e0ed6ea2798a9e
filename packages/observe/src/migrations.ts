import { createFullTextIndex, createLeaseTable, epochMsType, floatType, type MigrationStep } from '@vigil/platform';

export const observeMigrations: Record<string, MigrationStep> = {
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

    await db.schema
      .createTable('api_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('prefix', 'text', (c) => c.notNull())
      .addColumn('key_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('last_used_at', epochMsType)
      .addColumn('revoked_at', epochMsType)
      .execute();

    await db.schema
      .createTable('settings')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();

    await createLeaseTable(db);
  },
};
