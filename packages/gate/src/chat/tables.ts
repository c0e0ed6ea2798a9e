// The tables chat/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

/** A request's message on a chat platform (chat/): posted once, then edited as the request changes. */
export interface ChatMessageRow {
  id: string;
  request_id: string;
  /** `slack` or `discord`. */
  platform: string;
  channel: string;
  /** The platform's id of the message (Slack's ts, Discord's message id); null until it is posted. */
  message_id: string | null;
  created_at: number;
}

/** A signed interaction received (chat/seen.ts): the SHA-256 of its platform, timestamp and body, kept until its signature is stale. */
export interface ChatSeenInteractionRow {
  digest: string;
  expires_at: number;
}

/** Each request's message on a chat platform, and the interactions already received. */
export interface ChatTables {
  chat_messages: ChatMessageRow;
  chat_seen_interactions: ChatSeenInteractionRow;
}
