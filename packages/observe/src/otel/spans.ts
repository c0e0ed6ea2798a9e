// The decoded OTLP request as plain spans: hex ids, nanosecond times as bigint, attributes as JSON
// values. Pure; a span whose ids or times are unusable is refused here with the reason.
import type { WireAnyValue, WireKeyValue, WireLong, WireSpan, WireTraceRequest } from './proto.ts';

export type AttributeValue = string | number | boolean | null | AttributeValue[] | { [key: string]: AttributeValue };
export type Attributes = Record<string, AttributeValue>;

export type SpanStatus = 'unset' | 'ok' | 'error';

export interface OtlpSpanEvent {
  name: string;
  timeNanos: bigint;
  attributes: Attributes;
}

export interface OtlpSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  parentSpanId: string | null;
  name: string;
  startNanos: bigint;
  endNanos: bigint;
  attributes: Attributes;
  events: OtlpSpanEvent[];
  status: { code: SpanStatus; message: string };
  /** The attributes of the resource that sent the span (service.name, ...). */
  resource: Attributes;
}

export interface RefusedSpan {
  /** The span's id as sent (hex), or its position in the request when it has none. */
  span: string;
  reason: string;
}

const STATUS_CODES: Record<number, SpanStatus> = { 0: 'unset', 1: 'ok', 2: 'error' };

function longToBigInt(value: WireLong | null | undefined): bigint {
  if (value === null || value === undefined) return 0n;
  if (typeof value === 'number') return BigInt(Math.trunc(value));
  return BigInt.asUintN(64, (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0));
}

function longToNumber(value: WireLong): number | string {
  if (typeof value === 'number') return value;
  const signed = BigInt.asIntN(64, longToBigInt(value));
  // Beyond 2^53 a number would silently round: such a value is kept exact, as text.
  return signed >= BigInt(Number.MIN_SAFE_INTEGER) && signed <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(signed) : signed.toString();
}

/** protobufjs puts proto3 defaults on the prototype: only an own property was set on the wire (the oneof's member). */
const isSet = (value: object, field: string): boolean =>
  Object.prototype.hasOwnProperty.call(value, field) && (value as Record<string, unknown>)[field] != null;

function anyValue(value: WireAnyValue | null | undefined): AttributeValue {
  if (value === null || value === undefined) return null;
  if (isSet(value, 'stringValue')) return value.stringValue!;
  if (isSet(value, 'boolValue')) return value.boolValue!;
  if (isSet(value, 'intValue')) return longToNumber(value.intValue!);
  // NaN and the infinities have no JSON form.
  if (isSet(value, 'doubleValue')) return Number.isFinite(value.doubleValue!) ? value.doubleValue! : null;
  if (isSet(value, 'arrayValue')) return (value.arrayValue!.values ?? []).map(anyValue);
  if (isSet(value, 'kvlistValue')) return attributesOf(value.kvlistValue!.values);
  if (isSet(value, 'bytesValue')) return Buffer.from(value.bytesValue!).toString('base64');
  return null;
}

function attributesOf(list: readonly WireKeyValue[] | null | undefined): Attributes {
  const attributes: Attributes = {};
  for (const { key, value } of list ?? []) attributes[key] = anyValue(value);
  return attributes;
}

function hexOf(bytes: Uint8Array | null | undefined): string {
  // protobufjs gives a Buffer, or a plain empty array for an absent field.
  return bytes && bytes.length > 0 ? Buffer.from(bytes).toString('hex') : '';
}

const ZERO = /^0*$/;

/** One span, or why it is refused (OTLP: a trace id of 16 non-zero bytes, a span id of 8, an end not before the start). */
function readSpan(wire: WireSpan, resource: Attributes, position: string): OtlpSpan | RefusedSpan {
  const traceId = hexOf(wire.traceId);
  const spanId = hexOf(wire.spanId);
  const parent = hexOf(wire.parentSpanId);
  const span = spanId.length > 0 ? spanId : position;
  if (traceId.length !== 32 || ZERO.test(traceId)) return { span, reason: 'traceId must be 16 bytes, not all zero' };
  if (spanId.length !== 16 || ZERO.test(spanId)) return { span, reason: 'spanId must be 8 bytes, not all zero' };
  if (parent.length !== 0 && parent.length !== 16) return { span, reason: 'parentSpanId must be empty or 8 bytes' };
  const startNanos = longToBigInt(wire.startTimeUnixNano);
  const endNanos = longToBigInt(wire.endTimeUnixNano);
  if (startNanos === 0n) return { span, reason: 'startTimeUnixNano is missing' };
  if (endNanos < startNanos) return { span, reason: 'endTimeUnixNano is before startTimeUnixNano' };
  return {
    traceId,
    spanId,
    parentSpanId: parent.length === 0 || ZERO.test(parent) ? null : parent,
    name: wire.name ?? '',
    startNanos,
    endNanos,
    attributes: attributesOf(wire.attributes),
    events: (wire.events ?? []).map((event) => ({
      name: event.name ?? '',
      timeNanos: longToBigInt(event.timeUnixNano),
      attributes: attributesOf(event.attributes),
    })),
    status: { code: STATUS_CODES[wire.status?.code ?? 0] ?? 'unset', message: wire.status?.message ?? '' },
    resource,
  };
}

/** Every span of the request, in request order, and those refused with their reasons. */
export function spansOf(request: WireTraceRequest): { spans: OtlpSpan[]; refused: RefusedSpan[] } {
  const spans: OtlpSpan[] = [];
  const refused: RefusedSpan[] = [];
  let position = 0;
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const wire of scopeSpans.spans ?? []) {
        const read = readSpan(wire, resource, `#${position}`);
        position += 1;
        if ('reason' in read) refused.push(read);
        else spans.push(read);
      }
    }
  }
  return { spans, refused };
}
