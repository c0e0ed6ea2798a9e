// The tables encryption/ owns (times are epoch milliseconds); the service's schema (schema.ts) is
// composed of every feature's tables.

/**
 * A data key events' payloads and metadata are sealed under (AES-256-GCM), wrapped by the master
 * key (ENCRYPTION_KEY_FILE). Its owner is the set of data subjects its events name (by keyed hash)
 * or, for events naming none, their session; erasing a subject deletes the row, and with it every
 * copy's means of reading those events.
 */
export interface DataKeyRow {
  id: string;
  /** `subjects:` and the sorted keyed hashes, comma-separated, or `session:` and the session id. */
  owner: string;
  /** base64 of IV (12 bytes), GCM tag (16 bytes) and the encrypted 32-byte key. */
  wrapped: string;
  created_at: number;
}

export interface EncryptionTables {
  data_keys: DataKeyRow;
}
