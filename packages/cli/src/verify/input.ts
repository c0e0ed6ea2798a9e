/** Input a verdict cannot be reached on (unreadable file, wrong shape, bad flags): exit 2. */
export class InputError extends Error {
  override name = 'InputError';
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isHex64(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

/** What verification found wrong, and where. */
export interface Finding {
  /** A stable name of the check that failed, for --json readers. */
  check: string;
  message: string;
  /** The session (or the gate's request): printed under the log's own name (LogProfile.scopeField). */
  sessionId?: string;
  seq?: number;
  /** The event (or the gate's audit entry): printed as LogProfile.itemField. */
  eventId?: string;
  leafIndex?: number;
}

/** One checked event of a session chain, parsed from its canonical string. */
export interface ChainEvent {
  id: string;
  seq: number;
  sessionId: string;
  prevHash: string | null;
  /** sha256 hex of the canonical string: the chain hash. */
  hash: string;
}

/** An event's chain text parsed: the members the chain links by, and the whole object. */
export interface ParsedChainEvent extends Omit<ChainEvent, 'hash'> {
  fields: Record<string, unknown>;
}

/**
 * Reads the members the chain links by from an event's (or a gate entry's) canonical string
 * (docs/audit.md recipes), its scope from the member `scopeField` (`sessionId`, `requestId`);
 * undefined when the string is not such an object. The hash is of the string as given.
 */
export function parseChainEvent(text: string, scopeField: string): ParsedChainEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || value.v !== 1) return undefined;
  const { id, seq, prevHash } = value;
  const sessionId = value[scopeField];
  // prevHash is only ever compared with a computed hash, so any string will do here.
  if (typeof id !== 'string' || typeof sessionId !== 'string' || !Number.isSafeInteger(seq) || (prevHash !== null && typeof prevHash !== 'string'))
    return undefined;
  return { id, seq: seq as number, sessionId, prevHash: prevHash as string | null, fields: value };
}
