// The tables settings/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

export interface SettingRow {
  key: string;
  value: string;
  updated_at: number;
}

/** Runtime settings, one row per key. */
export interface SettingsTables {
  settings: SettingRow;
}
