// The tables redaction/ owns (times are epoch milliseconds); the service's schema (schema.ts) is
// composed of every feature's tables.

/** A redaction rule added through the admin API (those of REDACTION_RULES_FILE live in configuration). */
export interface RedactionRuleRow {
  id: string;
  name: string;
  description: string | null;
  enabled: number;
  kind: 'path' | 'regex';
  /** Set for kind `path`. */
  path: string | null;
  /** Set for kind `regex`, with its flags. */
  pattern: string | null;
  flags: string | null;
  label: string;
  created_at: number;
  updated_at: number;
}

export interface RedactionTables {
  redaction_rules: RedactionRuleRow;
}
