import { gunzip } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import { readJsonBody, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { keyWriter } from '../events/index.ts';
import { decodeJsonRequest, decodeProtobufRequest, encodeProtobufResponse, jsonResponse, type WireTraceRequest } from './proto.ts';
import { ingestTraces } from './service.ts';

const PROTOBUF = 'application/x-protobuf';
const JSON_TYPE = 'application/json';

/** A decoded OTLP body and the encoding its answer must use. */
interface OtlpBody {
  encoding: 'protobuf' | 'json';
  request: WireTraceRequest;
}

const exportResponseSchema = z
  .object({
    partialSuccess: z
      .object({ rejectedSpans: z.string().describe('int64 as a decimal string'), errorMessage: z.string() })
      .optional()
      .describe('Set when some spans were refused; the others are stored'),
  })
  .meta({ id: 'ExportTraceServiceResponse' });

const unsupported = (what: string) =>
  observeError('unsupportedMediaType', `${what}: OTLP/HTTP takes Content-Type ${PROTOBUF} or ${JSON_TYPE}, Content-Encoding gzip or none`);

/** The body bytes as sent, gunzipped when Content-Encoding says gzip (inflated no larger than the body limit). */
function inflated(request: FastifyRequest, body: Buffer, limit: number, done: (error: Error | null, bytes?: Buffer) => void): void {
  const encoding = (request.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
  if (encoding === 'identity' || encoding === '') return done(null, body);
  if (encoding !== 'gzip') return done(unsupported(`Content-Encoding ${encoding} is not supported`));
  gunzip(body, { maxOutputLength: limit }, (error, result) => {
    if (error === null) return done(null, result);
    done(
      (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE'
        ? observeError('payloadTooLarge', `Request body exceeds ${limit} bytes once gunzipped`)
        : observeError('otlpUndecodable', `The gzip body could not be inflated: ${error.message}`),
    );
  });
}

export async function registerOtelRoutes(app: ZodApp, ctx: ObserveContext): Promise<void> {
  const limit = ctx.config.bodyLimitBytes;
  // Its own encapsulated context: the protobuf and OTLP/JSON parsers apply to this route only.
  await app.register(async (otlp) => {
    otlp.removeAllContentTypeParsers();
    otlp.addContentTypeParser(PROTOBUF, { parseAs: 'buffer' }, (request, body, done) => {
      inflated(request, body as Buffer, limit, (error, bytes) => {
        if (error !== null) return done(error);
        try {
          done(null, { encoding: 'protobuf', request: decodeProtobufRequest(bytes!) } satisfies OtlpBody);
        } catch (decodeError) {
          done(observeError('otlpUndecodable', `The body is not a protobuf ExportTraceServiceRequest: ${(decodeError as Error).message}`));
        }
      });
    });
    otlp.addContentTypeParser(JSON_TYPE, { parseAs: 'buffer' }, (request, body, done) => {
      inflated(request, body as Buffer, limit, (error, bytes) => {
        if (error !== null) return done(error);
        let value: unknown;
        try {
          // The kit's strict reading of every JSON body: UTF-8 as sent, nesting within 100 levels.
          value = readJsonBody(bytes!, request.headers['content-type'], observeError);
        } catch (readError) {
          return done(readError as Error);
        }
        try {
          done(null, { encoding: 'json', request: decodeJsonRequest(value) } satisfies OtlpBody);
        } catch (decodeError) {
          done(observeError('otlpUndecodable', `The body is not an OTLP/JSON ExportTraceServiceRequest: ${(decodeError as Error).message}`));
        }
      });
    });
    otlp.addContentTypeParser('*', (request, _payload, done) => done(unsupported(`Content-Type ${request.headers['content-type']} is not supported`)));

    otlp.post(
      '/v1/traces',
      // The exporter's `headers` carry the key.
      routeOptions('ingest', {
        operationId: 'exportTraces',
        summary: 'OTLP/HTTP trace export: spans become events (protobuf or JSON, gzip or not)',
        description:
          'Body: an OTLP ExportTraceServiceRequest, `application/x-protobuf` or `application/json`, optionally `Content-Encoding: gzip`. ' +
          'The answer is an ExportTraceServiceResponse in the encoding of the request; spans refused by validation are counted in partialSuccess, the others are stored in one transaction. ' +
          'A span already stored is acknowledged, not stored again. 400 for a body that does not decode (protobuf, JSON or gzip); 413 past `BODY_LIMIT_BYTES` as sent or once gunzipped. docs/guide/opentelemetry.md.',
        tags: ['otel'],
        documentedBody: {
          [PROTOBUF]: { schema: { type: 'string', contentMediaType: PROTOBUF, description: 'An ExportTraceServiceRequest, protobuf-encoded' } },
          [JSON_TYPE]: { schema: { type: 'object', additionalProperties: {}, description: 'An ExportTraceServiceRequest in the OTLP/JSON encoding' } },
        },
        response: {
          200: {
            description: 'The export result, in the encoding of the request',
            content: {
              [PROTOBUF]: { schema: z.string().describe('An ExportTraceServiceResponse, protobuf-encoded') },
              [JSON_TYPE]: { schema: exportResponseSchema },
            },
          },
        },
      }),
      async (request, reply) => {
        const body = request.body as OtlpBody | undefined;
        const contentType = request.headers['content-type'] ?? '';
        // No bytes: an empty protobuf message is a valid (empty) request; empty JSON is not JSON.
        if (body === undefined && !contentType.toLowerCase().startsWith(PROTOBUF)) {
          throw contentType.toLowerCase().startsWith(JSON_TYPE) ? observeError('otlpUndecodable', 'The body is empty') : unsupported('No Content-Type');
        }
        const partialSuccess = await ingestTraces(ctx, body?.request ?? {}, keyWriter(request.apiKey));
        if (body?.encoding === 'json') return reply.status(200).send(jsonResponse(partialSuccess));
        return reply
          .status(200)
          .type(PROTOBUF)
          .send(Buffer.from(encodeProtobufResponse(partialSuccess)) as never);
      },
    );
  });
}
