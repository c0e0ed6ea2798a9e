import { encodeVector, fetchWithTimeout, VIGIL_VERSION } from '@vigil/platform';
import { type Embedder, LocalEmbedder, MAX_EMBED_CHARS, normalise } from './local-embedder.ts';

export { type Embedder, LocalEmbedder, MAX_EMBED_CHARS, stem, tokenize, wordWeight } from './local-embedder.ts';

/** The embedding backend failed (unreachable, timeout, non-2xx, malformed answer): a 500 (docs/api.md#errors). */
export class EmbeddingBackendError extends Error {
  override name = 'EmbeddingBackendError';
  constructor(
    message: string,
    /** False for answers that will not change on retry (4xx other than 408/429): the worker then isolates the bad input. */
    readonly retryable = true,
  ) {
    super(message);
  }
}

/** Cosine of two unit vectors (their dot product), clamped to the 0..1 score range. */
export function similarity(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) dot += a[i]! * b[i]!;
  return dot <= 0 ? 0 : dot >= 1 ? 1 : dot;
}

// ---------------------------------------------------------------------------------------------
// OpenAI-compatible backend.
// ---------------------------------------------------------------------------------------------

export interface OpenAIEmbedderOptions {
  /** Base address; `/v1/embeddings` is appended (a base already ending in `/v1` gets `/embeddings`). */
  url: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
  /** Inputs per request. */
  batchSize?: number;
}

/** `https://api.openai.com` and `https://api.openai.com/v1` both name the same endpoint. */
export function embeddingsEndpoint(base: string): string {
  const trimmed = base.replace(/\/+$/, '');
  return /\/v1$/.test(trimmed) ? `${trimmed}/embeddings` : `${trimmed}/v1/embeddings`;
}

/**
 * Any OpenAI-compatible `POST /v1/embeddings` (OpenAI, Azure-style proxies, Ollama, vLLM, LM
 * Studio…): `{model, input: string[]}` in batches of `batchSize`, bearer key when set, a deadline
 * per request. The answer must hold one finite vector per input, all of one length; vectors are
 * normalised here (not every server does it).
 */
export class OpenAIEmbedder implements Embedder {
  readonly model: string;
  private learnedDimensions = 0;
  private readonly endpoint: string;
  private readonly batchSize: number;

  constructor(private readonly options: OpenAIEmbedderOptions) {
    this.model = options.model;
    this.endpoint = embeddingsEndpoint(options.url);
    this.batchSize = options.batchSize ?? 64;
  }

  get dimensions(): number {
    return this.learnedDimensions;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    for (let offset = 0; offset < texts.length; offset += this.batchSize) {
      const batch = texts.slice(offset, offset + this.batchSize).map((t) => (t.length > MAX_EMBED_CHARS ? t.slice(0, MAX_EMBED_CHARS) : t));
      // An empty string is refused by some servers; a space embeds as "nothing".
      vectors.push(...(await this.request(batch.map((t) => (t.trim().length === 0 ? ' ' : t)))));
    }
    return vectors;
  }

  private async request(input: string[]): Promise<Float32Array[]> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      'user-agent': `vigil-observe/${VIGIL_VERSION}`,
    };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let response: Response;
    let text: string;
    try {
      response = await fetchWithTimeout(this.endpoint, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.model, input }),
        timeoutMs: this.options.timeoutMs,
      });
      // The deadline covers the body too.
      text = await response.text();
    } catch (error) {
      const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${this.options.timeoutMs} ms` : (error as Error).message;
      throw new EmbeddingBackendError(`embedding backend unreachable: ${reason}`);
    }
    if (!response.ok) {
      const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
      throw new EmbeddingBackendError(`embedding backend answered HTTP ${response.status}`, retryable);
    }
    return this.parse(text, input.length);
  }

  private parse(text: string, expected: number): Float32Array[] {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new EmbeddingBackendError('embedding backend answered with invalid JSON');
    }
    const data = (body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data) || data.length !== expected) {
      throw new EmbeddingBackendError(`embedding backend answered ${Array.isArray(data) ? data.length : 'no'} vectors for ${expected} inputs`);
    }
    const vectors: (Float32Array | undefined)[] = new Array(expected);
    let dimensions = 0;
    data.forEach((item: unknown, position) => {
      const entry = item as { embedding?: unknown; index?: unknown } | null;
      const index = typeof entry?.index === 'number' ? entry.index : position;
      const embedding = entry?.embedding;
      if (!Number.isInteger(index) || index < 0 || index >= expected || vectors[index] !== undefined) {
        throw new EmbeddingBackendError('embedding backend answered with invalid indexes');
      }
      if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every((v) => typeof v === 'number' && Number.isFinite(v))) {
        throw new EmbeddingBackendError('embedding backend answered with a malformed vector (base64 encoding is not supported)');
      }
      if (dimensions !== 0 && embedding.length !== dimensions) throw new EmbeddingBackendError('embedding backend answered vectors of different lengths');
      dimensions = embedding.length;
      vectors[index] = normalise(Float32Array.from(embedding as number[]));
    });
    this.learnedDimensions = dimensions;
    return vectors as Float32Array[];
  }
}

/**
 * An embedder over `inner` that computes each distinct text's answer once: the last `capacity`
 * texts and their answers are kept (least recently used out). Agents repeat themselves (the same
 * prompt, tool call or answer in session after session), so this saves CPU with the local embedder
 * and money with a paid backend. Answers handed out are shared: callers must not modify them.
 */
abstract class RecentTexts<Inner extends { readonly model: string; readonly dimensions: number }, Answer> {
  private readonly cache = new Map<string, Answer>();

  constructor(
    readonly inner: Inner,
    private readonly capacity = 5000,
  ) {}

  get model(): string {
    return this.inner.model;
  }

  get dimensions(): number {
    return this.inner.dimensions;
  }

  protected async answer(texts: string[], compute: (missing: string[]) => Promise<Answer[]>): Promise<Answer[]> {
    const result: (Answer | undefined)[] = texts.map((text) => {
      const hit = this.cache.get(text);
      if (hit !== undefined) {
        this.cache.delete(text);
        this.cache.set(text, hit);
      }
      return hit;
    });
    const missing = [...new Set(texts.filter((_, i) => result[i] === undefined))];
    if (missing.length > 0) {
      const answers = await compute(missing);
      const fresh = new Map(missing.map((text, i) => [text, answers[i]!]));
      texts.forEach((text, i) => {
        if (result[i] === undefined) result[i] = fresh.get(text);
      });
      for (const [text, answer] of fresh) {
        if (text.length > MAX_EMBED_CHARS) continue;
        this.cache.set(text, answer);
        if (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value as string);
      }
    }
    return result as Answer[];
  }
}

/** An embedder whose vectors for recent texts are kept (RecentTexts). */
export class CachingEmbedder extends RecentTexts<Embedder, Float32Array> implements Embedder {
  embed(texts: string[]): Promise<Float32Array[]> {
    return this.answer(texts, (missing) => this.inner.embed(missing));
  }
}

/** A vector in its stored encoding (the platform's encodeVector) with its length, which decoding the sparse layout needs. */
export interface StoredVector {
  dims: number;
  vector: Buffer;
}

/** What the embedding drain writes: each text's vector as stored. `dimensions` is known once a call has answered. */
export interface StoredVectorEmbedder {
  readonly model: string;
  readonly dimensions: number;
  embedStored(texts: string[]): Promise<StoredVector[]>;
}

/** An embedder's vectors encoded on the calling thread (a remote backend's answers arrive there anyway). */
export function encodedHere(embedder: Embedder): StoredVectorEmbedder {
  return {
    get model() {
      return embedder.model;
    },
    get dimensions() {
      return embedder.dimensions;
    },
    async embedStored(texts) {
      return (await embedder.embed(texts)).map((vector) => ({ dims: vector.length, vector: encodeVector(vector) }));
    },
  };
}

/** A StoredVectorEmbedder whose encodings for recent texts are kept (RecentTexts): a repeated text costs neither hashing nor encoding. */
export class CachingStoredEmbedder extends RecentTexts<StoredVectorEmbedder, StoredVector> implements StoredVectorEmbedder {
  embedStored(texts: string[]): Promise<StoredVector[]> {
    return this.answer(texts, (missing) => this.inner.embedStored(missing));
  }
}

/**
 * Whether re-embedding texts is cheap and gives the very vectors stored: the local embedder is
 * deterministic and runs in-process, so search re-scores its best candidates exactly; a remote
 * backend is not asked again (cost, latency), its int8 scores stand.
 */
export function embedsLocally(embedder: Embedder): boolean {
  return (embedder instanceof CachingEmbedder ? embedder.inner : embedder) instanceof LocalEmbedder;
}

export interface EmbedderConfig {
  url?: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
}

/**
 * The OpenAI-compatible backend when EMBEDDINGS_URL is set, else the local embedder (EMBEDDINGS_MODEL
 * then plays no part); either behind a cache of recent texts.
 */
export function createEmbedder(config: EmbedderConfig): CachingEmbedder {
  return new CachingEmbedder(
    config.url ? new OpenAIEmbedder({ url: config.url, model: config.model, apiKey: config.apiKey, timeoutMs: config.timeoutMs }) : new LocalEmbedder(),
  );
}
