// The tables encryption/ owns in the events' database (times are epoch milliseconds); the service's
// schema (schema.ts) is composed of every feature's tables. The data keys themselves live in the
// key store (key-store.ts), never here.

/** What the events' database records of its encryption: which key store and which master key sealed it. */
export interface EncryptionStateRow {
  id: string;
  /** The key store's identity (DataKeyStore.identity): a start against another store is refused. */
  key_store_id: string;
  /** base64 of 32 zero bytes sealed under the master key: a start with another key is refused. */
  master_check: string;
}

/**
 * A data key an erasure destroys, recorded in the erasure's transaction and deleted once the key is
 * gone from the key store: a row left (the process died in between) is finished by the job.
 */
export interface DataKeyDestructionRow {
  key_id: string;
  erasure_id: string;
  created_at: number;
}

export interface EncryptionTables {
  encryption_state: EncryptionStateRow;
  data_key_destructions: DataKeyDestructionRow;
}
