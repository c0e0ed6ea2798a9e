import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/** Bytes per chunk of a ByteWriter. */
const CHUNK_BYTES = 1024 * 1024;
/** Chunks kept for reuse: a 1,000-step page with its context is some 20 of them. */
const POOLED_CHUNKS = 24;
const pool: Buffer[] = [];

/**
 * A response body written as UTF-8 straight into buffers: a replay page is some 20 MB of JSON, most
 * of it windows of context already encoded once (state.ts), so it is copied, never built as one
 * JavaScript string and encoded again. Written into 1 MiB chunks taken from a pool and sent as
 * they are; once the response is handed to the operating system they go back to the pool. Fresh
 * buffers of that size for every page made V8 collect its whole heap every other page (external
 * memory pressure), which cost more than rendering the page.
 */
export class ByteWriter {
  private readonly full: Buffer[] = [];
  private readonly parts: Buffer[] = [];
  private chunk: Buffer;
  private position = 0;

  constructor() {
    this.chunk = this.take(CHUNK_BYTES);
  }

  text(text: string): void {
    // A UTF-16 code unit takes at most 3 bytes of UTF-8.
    this.room(text.length * 3);
    this.position += this.chunk.write(text, this.position);
  }

  /** The first `length` bytes of `bytes` (all of them by default). */
  bytes(bytes: Buffer, length = bytes.length): void {
    this.room(length);
    this.position += bytes.copy(this.chunk, this.position, 0, length);
  }

  /** What was written, in order (views of the chunks: valid until `release`). */
  buffers(): Buffer[] {
    return [...this.parts, this.chunk.subarray(0, this.position)];
  }

  /** Gives the chunks back to the pool; nothing written may be read afterwards. */
  release(): void {
    for (const chunk of this.full) if (chunk.length === CHUNK_BYTES && pool.length < POOLED_CHUNKS) pool.push(chunk);
    this.full.length = 0;
  }

  toString(): string {
    return Buffer.concat(this.buffers()).toString();
  }

  private take(bytes: number): Buffer {
    const chunk = bytes <= CHUNK_BYTES ? (pool.pop() ?? Buffer.allocUnsafe(CHUNK_BYTES)) : Buffer.allocUnsafe(bytes);
    this.full.push(chunk);
    return chunk;
  }

  private room(bytes: number): void {
    if (this.position + bytes <= this.chunk.length) return;
    this.parts.push(this.chunk.subarray(0, this.position));
    this.chunk = this.take(bytes);
    this.position = 0;
  }
}

/** Sends what `out` holds as an application/json body and releases its chunks once the response is out. */
export function sendWritten(reply: FastifyReply, out: ByteWriter): FastifyReply {
  const buffers = out.buffers();
  let length = 0;
  for (const buffer of buffers) length += buffer.length;
  // Released only when the whole body was handed over; a response cut short leaves them to the collector.
  reply.raw.once('finish', () => out.release());
  return reply
    .type('application/json; charset=utf-8')
    .header('content-length', length)
    .send(Readable.from(buffers) as never);
}
