// OTLP trace messages through protobufjs, from the official .proto files (proto/README.md): the
// request decoded from protobuf or from OTLP/JSON, the response encoded in the request's format.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type protobuf from 'protobufjs';

const PROTO_DIR = fileURLToPath(new URL('./proto/', import.meta.url));
const require = createRequire(import.meta.url);

interface OtlpTypes {
  request: protobuf.Type;
  response: protobuf.Type;
}

/**
 * protobufjs and the parsed .proto files are loaded with the first OTLP request, not at start: a
 * service that receives no traces does not hold them.
 */
let loaded: OtlpTypes | undefined;

function types(): OtlpTypes {
  loaded ??= loadTypes(require('protobufjs') as typeof protobuf);
  return loaded;
}

function loadTypes({ Root }: typeof protobuf): OtlpTypes {
  const root = new Root();
  // Imports in the .proto files are relative to the folder they were published from.
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  return {
    request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
  };
}

/** An int64/fixed64 as protobufjs gives it: a Long (the `long` package is installed) or a number. */
export type WireLong = number | { low: number; high: number; unsigned?: boolean };

export interface WireKeyValue {
  key: string;
  value?: WireAnyValue | null;
}

export interface WireAnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: WireLong | null;
  doubleValue?: number | null;
  arrayValue?: { values?: WireAnyValue[] | null } | null;
  kvlistValue?: { values?: WireKeyValue[] | null } | null;
  bytesValue?: Uint8Array | null;
}

export interface WireSpan {
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
  parentSpanId?: Uint8Array | null;
  name?: string | null;
  kind?: number | null;
  startTimeUnixNano?: WireLong | null;
  endTimeUnixNano?: WireLong | null;
  attributes?: WireKeyValue[] | null;
  events?: { timeUnixNano?: WireLong | null; name?: string | null; attributes?: WireKeyValue[] | null }[] | null;
  status?: { code?: number | null; message?: string | null } | null;
}

/** ExportTraceServiceRequest as decoded (fields absent from the wire are defaults or missing). */
export interface WireTraceRequest {
  resourceSpans?:
    | {
        resource?: { attributes?: WireKeyValue[] | null } | null;
        scopeSpans?: { scope?: { name?: string | null; version?: string | null } | null; spans?: WireSpan[] | null }[] | null;
      }[]
    | null;
}

/** Decodes a binary ExportTraceServiceRequest; throws on bytes that are not one. */
export function decodeProtobufRequest(body: Uint8Array): WireTraceRequest {
  return types().request.decode(body) as unknown as WireTraceRequest;
}

const HEX_ID = /^(?:[0-9a-f]{2})*$/i;

/**
 * OTLP/JSON ids are hex (the proto3 JSON mapping would read base64): they become bytes before
 * protobufjs reads the rest by the official schema. An id that is not hex becomes empty bytes, so
 * its span is refused by validation rather than the whole request.
 */
function hexIdsToBytes(request: unknown): void {
  const toBytes = (holder: Record<string, unknown>, field: string): void => {
    const value = holder[field];
    if (typeof value === 'string') holder[field] = HEX_ID.test(value) ? Buffer.from(value, 'hex') : new Uint8Array(0);
  };
  const list = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter((v) => v !== null && typeof v === 'object') : []);
  if (request === null || typeof request !== 'object') return;
  for (const resourceSpans of list((request as Record<string, unknown>).resourceSpans)) {
    for (const scopeSpans of list(resourceSpans.scopeSpans)) {
      for (const span of list(scopeSpans.spans)) {
        for (const field of ['traceId', 'spanId', 'parentSpanId']) toBytes(span, field);
        for (const link of list(span.links)) for (const field of ['traceId', 'spanId']) toBytes(link, field);
      }
    }
  }
}

/** Reads an OTLP/JSON ExportTraceServiceRequest (already parsed); throws when its shape is not one. */
export function decodeJsonRequest(json: unknown): WireTraceRequest {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new TypeError('the body is not a JSON object');
  hexIdsToBytes(json);
  return types().request.fromObject(json as Record<string, unknown>) as unknown as WireTraceRequest;
}

export interface PartialSuccess {
  rejectedSpans: number;
  errorMessage: string;
}

/** ExportTraceServiceResponse in protobuf; partial_success is left unset when every span was accepted. */
export function encodeProtobufResponse(partial: PartialSuccess | null): Uint8Array {
  return types()
    .response.encode(types().response.fromObject(partial === null ? {} : { partialSuccess: partial }))
    .finish();
}

/** ExportTraceServiceResponse in OTLP/JSON (int64 as a decimal string, as the proto3 JSON mapping has it). */
export function jsonResponse(partial: PartialSuccess | null): { partialSuccess?: { rejectedSpans: string; errorMessage: string } } {
  return partial === null ? {} : { partialSuccess: { rejectedSpans: String(partial.rejectedSpans), errorMessage: partial.errorMessage } };
}
