/**
 * The credential an event was written with, recorded by the server as the event's
 * `metadata.writtenBy`, which the chain hash covers (docs/audit.md#who-wrote-an-event):
 * `key:<API key id>`, `webhook:approval_gate` or `webhook:form_service` (the source's signature:
 * the gate's forwarding), `service_token` (the internal route the gate reports breaches to),
 * `server` (verdicts and alert events the service writes itself) or `none` (AUTH_DISABLED). One
 * short string: it is stored with every event.
 */
export type EventWriter = `key:${string}` | 'webhook:approval_gate' | 'webhook:form_service' | 'service_token' | 'server' | 'none';

/** The metadata member the server writes and a client may not send. */
export const WRITTEN_BY = 'writtenBy';

export const SERVER_WRITER: EventWriter = 'server';

/** The writer of a request authenticated by an API key, or by nothing when authentication is disabled. */
export function keyWriter(key: { id: string } | null): EventWriter {
  return key === null ? 'none' : `key:${key.id}`;
}
