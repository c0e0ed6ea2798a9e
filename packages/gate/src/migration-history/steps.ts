// The gate's migration steps 0001–0009 as they shipped: frozen history. A step keeps doing what it
// did when it shipped even after the feature's live code changes, so these steps import no feature
// code; the audit chain's hash recipe they ran is a stored format that never changes
// (stored-formats/). Later steps live in the feature that owns their tables (src/migrations.ts
// collects them).
import {
  backfillLeaves,
  createAdminChangeTable,
  createApiKeyTable,
  createAuditLogTables,
  createLeaseTable,
  epochMsType,
  storeHashesAsBytes,
  withDeliveryColumns,
  type MigrationStep,
} from '@vigil/platform';
import { sql } from 'kysely';
import { auditEntryHash, chainEntryOf, type StoredAuditEntry } from '../stored-formats/index.ts';

export const gateHistory: Record<string, MigrationStep> = {
  async '0001_gate'(db) {
    await db.schema
      .createTable('requests')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('params', 'text', (c) => c.notNull())
      .addColumn('context', 'text', (c) => c.notNull())
      .addColumn('urgency', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('expires_at', epochMsType)
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('decided_at', epochMsType)
      .addColumn('decided_by', 'text')
      .addColumn('decision_reason', 'text')
      .addColumn('policy_decision', 'text', (c) => c.notNull())
      .addColumn('confirmed_at', epochMsType)
      .addColumn('execution_result', 'text')
      .execute();
    await db.schema.createIndex('requests_created').on('requests').columns(['created_at', 'id']).execute();
    await db.schema.createIndex('requests_status_created').on('requests').columns(['status', 'created_at']).execute();
    await db.schema.createIndex('requests_action_created').on('requests').columns(['action', 'created_at']).execute();
    await db.schema.createIndex('requests_urgency_created').on('requests').columns(['urgency', 'created_at']).execute();
    // The expiry scanner reads pending requests by deadline.
    await db.schema.createIndex('requests_status_expires').on('requests').columns(['status', 'expires_at']).execute();

    await db.schema
      .createTable('audit_entries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('ts', epochMsType, (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('details', 'text')
      .execute();
    await db.schema.createIndex('audit_request').on('audit_entries').columns(['request_id', 'ts', 'id']).execute();

    await db.schema
      .createTable('policies')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('priority', 'integer', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('rules', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();

    await createApiKeyTable(db, (table) => table.addColumn('scopes', 'text', (c) => c.notNull()).addColumn('rate_limit', 'integer'));

    await db.schema
      .createTable('webhooks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('secret', 'text')
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();

    await withDeliveryColumns(
      db.schema
        .createTable('deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('webhook_id', 'text')
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('event', 'text', (c) => c.notNull()),
    ).execute();
    await db.schema.createIndex('deliveries_due').on('deliveries').columns(['status', 'next_attempt_at']).execute();
    await db.schema.createIndex('deliveries_webhook').on('deliveries').columns(['webhook_id', 'created_at']).execute();

    // Monotonic counters; `policies` is bumped on every policy change so every instance's cache can tell.
    await db.schema
      .createTable('counters')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('value', 'integer', (c) => c.notNull())
      .execute();
    await db.insertInto('counters').values({ name: 'policies', value: 0 }).execute();

    await createLeaseTable(db);
  },

  /**
   * Client sessions (auth/sessions.ts): short-lived bearer tokens issued for an API key to a
   * signed-in dashboard user or an MCP client. Only the token's SHA-256 is stored; requests made
   * with it have the key's scopes and rate limit and are attributed `<kind>:<name>`.
   */
  async '0002_dashboard_sessions'(db) {
    await db.schema
      .createTable('dashboard_sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('prefix', 'text', (c) => c.notNull())
      .addColumn('key_id', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('expires_at', epochMsType, (c) => c.notNull())
      .addColumn('revoked_at', epochMsType)
      .execute();
    await db.schema.createIndex('dashboard_sessions_key').on('dashboard_sessions').columns(['key_id', 'created_at']).execute();
    await db.schema.createIndex('dashboard_sessions_expires').on('dashboard_sessions').columns(['expires_at']).execute();
  },

  /**
   * Who decided (auth/actor.ts): every audit entry also records the API key behind the credential —
   * its id and its name as it was then (a later rename or revocation does not rewrite history);
   * null for the gate's own actions (policy decisions, expiry) and for entries written before this
   * step. `action` copies the request's action (it never changes) so GET /api/audit filters by it
   * through an index; every filter of that list has one, each ending in (ts, id) for its order.
   */
  async '0003_audit_key_actor'(db) {
    await db.schema.alterTable('audit_entries').addColumn('actor_key_id', 'text').execute();
    await db.schema.alterTable('audit_entries').addColumn('actor_key_name', 'text').execute();
    await db.schema.alterTable('audit_entries').addColumn('action', 'text').execute();
    await sql`update audit_entries set action = (select r.action from requests r where r.id = audit_entries.request_id)`.execute(db);
    await db.schema.createIndex('audit_ts').on('audit_entries').columns(['ts', 'id']).execute();
    await db.schema.createIndex('audit_actor_ts').on('audit_entries').columns(['actor', 'ts', 'id']).execute();
    await db.schema.createIndex('audit_event_ts').on('audit_entries').columns(['event', 'ts', 'id']).execute();
    await db.schema.createIndex('audit_action_ts').on('audit_entries').columns(['action', 'ts', 'id']).execute();
    await db.schema.createIndex('audit_key_ts').on('audit_entries').columns(['actor_key_id', 'ts', 'id']).execute();
  },

  /** Every administrative change (policies, API keys, webhooks) with its actor, before and after (platform/change-log.ts). */
  async '0004_admin_changes'(db) {
    await createAdminChangeTable(db);
  },
  /**
   * The audit chain (audit-trail/chain.ts): every audit entry gets its request's `seq`, `prev_hash` and
   * `hash`, and the request row its chain's head. Existing trails are linked in the order they were
   * shown (time, then id). The unique (request_id, seq) index means two writers can never fork a chain.
   */
  async '0005_audit_chain'(db) {
    await db.schema
      .alterTable('audit_entries')
      .addColumn('seq', 'integer', (c) => c.notNull().defaultTo(-1))
      .execute();
    await db.schema.alterTable('audit_entries').addColumn('prev_hash', 'text').execute();
    await db.schema
      .alterTable('audit_entries')
      .addColumn('hash', 'text', (c) => c.notNull().defaultTo(''))
      .execute();
    await db.schema
      .alterTable('requests')
      .addColumn('audit_head_seq', 'integer', (c) => c.notNull().defaultTo(-1))
      .execute();
    await db.schema.alterTable('requests').addColumn('audit_head_hash', 'text').execute();
    const rows = (await db.selectFrom('audit_entries').selectAll().orderBy('request_id').orderBy('ts').orderBy('id').execute()) as StoredAuditEntry[];
    let requestId: string | null = null;
    let seq = -1;
    let prevHash: string | null = null;
    const setHead = async () => {
      if (requestId !== null) await db.updateTable('requests').set({ audit_head_seq: seq, audit_head_hash: prevHash }).where('id', '=', requestId).execute();
    };
    for (const row of rows) {
      if (row.request_id !== requestId) {
        await setHead();
        requestId = row.request_id;
        seq = -1;
        prevHash = null;
      }
      seq += 1;
      const hash = auditEntryHash(chainEntryOf({ ...row, ts: Number(row.ts), seq }), prevHash);
      await db.updateTable('audit_entries').set({ seq, prev_hash: prevHash, hash }).where('id', '=', row.id).execute();
      prevHash = hash;
    }
    await setHead();
    await db.schema.createIndex('audit_request_seq').on('audit_entries').columns(['request_id', 'seq']).unique().execute();
  },
  /**
   * The audit log (audit-log/): its tables, then every existing audit entry becomes a leaf (its
   * chain hash, under its request).
   */
  async '0006_audit_log'(db) {
    await createAuditLogTables(db);
    await backfillLeaves(db, 'audit_entries', 'request_id');
  },
  /** The requests' chat messages (chat/): one per request and platform channel. */
  async '0007_chat_messages'(db) {
    await db.schema
      .createTable('chat_messages')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('platform', 'text', (c) => c.notNull())
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('message_id', 'text')
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
    // Every transition of a request looks up its messages to edit them.
    await db.schema.createIndex('chat_messages_request').on('chat_messages').columns(['request_id']).execute();
  },
  /**
   * Indexes every creation writes and no query needs (docs/architecture.md, "Hot path"). The expiry
   * scanner reads requests that have a deadline, so only those are indexed: a request created
   * without `expiresAt`, the common case, writes no entry there (the scan's `expires_at <= ?`
   * implies the predicate on both databases). `audit_request` (request_id, ts, id) duplicated the
   * unique (request_id, seq) index every trail is read by: the audit list's `requestId` filter now
   * reads that one and sorts the request's own entries.
   */
  async '0008_hot_path_indexes'(db) {
    await db.schema.dropIndex('requests_status_expires').execute();
    await db.schema.createIndex('requests_deadline').on('requests').columns(['status', 'expires_at']).where('expires_at', 'is not', null).execute();
    await db.schema.dropIndex('audit_request').execute();
  },

  /** The audit log's leaves and stored nodes as their 32 bytes instead of hex text (platform stored-hash.ts), as observe's 0022 stores them. */
  async '0009_binary_audit_log_hashes'(db, dialect) {
    await storeHashesAsBytes(db, dialect, 'audit_log_leaves', ['leaf_hash']);
    await storeHashesAsBytes(db, dialect, 'audit_log_nodes', ['hash']);
  },
};
