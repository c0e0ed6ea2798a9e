import { fetchWithTimeout, VIGIL_VERSION } from '@vigil/platform';

/**
 * Turns texts into vectors. Every vector an embedder returns is L2-normalised, so the cosine of two
 * vectors is their dot product (the search loop relies on it).
 */
export interface Embedder {
  /** Stored with every vector; rows of another model are ignored by search. */
  readonly model: string;
  /** Length of the vectors; 0 while unknown (a remote backend reports it with its first answer). */
  readonly dimensions: number;
  embed(texts: string[]): Promise<Float32Array[]>;
}

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

/** Longest text handed to an embedder; the rest is cut (≈ 1,000 tokens, inside every common model's limit). */
export const MAX_EMBED_CHARS = 4000;

/** Scales `vector` to unit length in place; a zero vector stays zero. */
export function normalise(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  if (sum > 0) {
    const scale = 1 / Math.sqrt(sum);
    for (let i = 0; i < vector.length; i++) vector[i]! *= scale;
  }
  return vector;
}

/** Cosine of two unit vectors (their dot product), clamped to the 0..1 score range. */
export function similarity(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) dot += a[i]! * b[i]!;
  return dot <= 0 ? 0 : dot >= 1 ? 1 : dot;
}

// ---------------------------------------------------------------------------------------------
// Local embedder: feature hashing, no network, no corpus.
// ---------------------------------------------------------------------------------------------

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over UTF-16 code units of `text[start, end)`, continuing from `hash`. */
function fnv(hash: number, text: string, start = 0, end = text.length): number {
  let h = hash;
  for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME);
  return h;
}

/** Murmur3's finaliser: spreads FNV's weak low bits over the whole word (bucket and sign come from it). */
function mix(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// Each kind of feature hashes from its own seed, so the word "cat" and the 3-gram "cat" differ.
const WORD_SEED = fnv(FNV_OFFSET, 'w:');
const BIGRAM_SEED = fnv(FNV_OFFSET, 'b:');
const TRIGRAM_SEED = fnv(FNV_OFFSET, 'c:');
const STEM_SEED = fnv(FNV_OFFSET, 's:');

/**
 * Words so common in English (and in agent traffic) that they say nothing about a topic. They
 * keep a tenth of a word's weight and feed neither bigrams nor character 3-grams.
 */
const STOP_WORDS = new Set(
  (
    'a an and are as at be been but by can could did do does for from had has have he her his i if in into is it its me my ' +
    'no not of on or our out she so than that the their them then there these they this those to up us was we were what when ' +
    'where which who why will with would you your about after all also any just more most only other over same some such very ' +
    'should shall may might must here how each both few own too via per am let get got please ok okay yes null true false ' +
    'undefined none'
  ).split(' '),
);

const TOKEN = /[\p{L}\p{N}]+/gu;
const CAMEL_BOUNDARY = /([\p{Ll}\p{N}])(\p{Lu})/gu;
const HAS_DIGIT = /\p{N}/u;
const HAS_LETTER = /\p{L}/u;
const MAX_TOKEN_CHARS = 40;

/** Lower-cased words: camelCase and snake_case identifiers split into their parts, very long tokens cut. */
export function tokenize(text: string): string[] {
  const spaced = text.normalize('NFKC').replace(CAMEL_BOUNDARY, '$1 $2').toLowerCase();
  const tokens = spaced.match(TOKEN) ?? [];
  return tokens.map((t) => (t.length > MAX_TOKEN_CHARS ? t.slice(0, MAX_TOKEN_CHARS) : t));
}

/**
 * The IDF-like weight of a word without a corpus. Stop words 0.1. Numbers and long letter-digit
 * mixes (ids, hashes) 0.3: they match exactly or not at all and should not outweigh words. Other
 * words by length, a stand-in for rarity (Zipf: frequent words are short): 1 letter 0.2,
 * 2 letters 0.5, then 0.5 + length/8 up to 1.5 (8 letters and longer).
 */
export function wordWeight(token: string): number {
  if (STOP_WORDS.has(token)) return 0.1;
  const digits = HAS_DIGIT.test(token);
  if (digits && (!HAS_LETTER.test(token) || token.length >= 10)) return 0.3;
  if (token.length === 1) return 0.2;
  if (token.length === 2) return 0.5;
  return Math.min(1.5, 0.5 + token.length / 8);
}

// Longest first; `ies` becomes `y`, `ss` keeps its `s`, a final `e` goes too, so
// deploy/deployed/deployments and migrate/migrating/migration meet on one stem.
const SUFFIXES = ['ments', 'ment', 'ings', 'ions', 'ing', 'ion', 'ies', 'ers', 'ed', 'es', 'er', 'ly', 's'];

/** A crude English stem (suffix stripping, stem of at least 3 letters); other scripts pass unchanged. */
export function stem(token: string): string {
  if (token.length <= 4 || HAS_DIGIT.test(token)) return token;
  for (const suffix of SUFFIXES) {
    if (token.endsWith(suffix) && token.length - suffix.length >= 3 && !(suffix === 's' && token.endsWith('ss'))) {
      const base = token.slice(0, token.length - suffix.length);
      return suffix === 'ies' ? `${base}y` : base;
    }
  }
  return token.length > 4 && token.endsWith('e') ? token.slice(0, -1) : token;
}

/** Share of a word's weight carried by its stem (inflections of one word match strongly). */
const STEM_SHARE = 0.8;
/** Share of a word's weight carried by its character 3-grams (fuzzy matching of inflections and typos). */
const TRIGRAM_SHARE = 0.5;
/** Weight of a bigram relative to the geometric mean of its two words (phrases, word order). */
const BIGRAM_SHARE = 0.6;

/**
 * Built-in embedder, no network: the text's word unigrams, their stems, word bigrams and
 * character 3-grams (per word, with boundary marks) are hashed (FNV-1a, finalised with murmur3's mixer) into
 * `dimensions` buckets with a hash-derived sign (so unrelated features cancel out instead of
 * piling up). A feature's value is its weight × (1 + ln tf) (sub-linear term frequency); the
 * vector is L2-normalised. Deterministic: the same text always gives the same vector.
 */
export class LocalEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  private readonly mask: number;

  constructor(dimensions = 512) {
    if (dimensions < 16 || (dimensions & (dimensions - 1)) !== 0) throw new Error('LocalEmbedder dimensions must be a power of two ≥ 16');
    this.dimensions = dimensions;
    this.mask = dimensions - 1;
    this.model = `vigil-local-hash-${dimensions}-v1`;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text));
  }

  embedOne(text: string): Float32Array {
    const counts = new Map<number, number>();
    const weights = new Map<number, number>();
    const add = (hash: number, weight: number): void => {
      counts.set(hash, (counts.get(hash) ?? 0) + 1);
      if (!weights.has(hash)) weights.set(hash, weight);
    };
    const tokens = tokenize(text.length > MAX_EMBED_CHARS ? text.slice(0, MAX_EMBED_CHARS) : text);
    let previous: string | null = null;
    let previousWeight = 0;
    for (const token of tokens) {
      const weight = wordWeight(token);
      add(mix(fnv(WORD_SEED, token)), weight);
      if (weight >= 0.5) add(mix(fnv(STEM_SEED, stem(token))), STEM_SHARE * weight);
      if (previous !== null) {
        add(mix(fnv(fnv(fnv(BIGRAM_SEED, previous), ' '), token)), BIGRAM_SHARE * Math.sqrt(weight * previousWeight));
      }
      previous = token;
      previousWeight = weight;
      if (weight >= 0.5 && !HAS_DIGIT.test(token)) {
        // "^tok$": the boundary marks let prefixes and suffixes count as such.
        const marked = `^${token}$`;
        const grams = marked.length - 2;
        const gramWeight = (TRIGRAM_SHARE * weight) / Math.sqrt(grams);
        for (let i = 0; i < grams; i++) add(mix(fnv(TRIGRAM_SEED, marked, i, i + 3)), gramWeight);
      }
    }
    const vector = new Float32Array(this.dimensions);
    for (const [hash, count] of counts) {
      const value = weights.get(hash)! * (1 + Math.log(count));
      vector[hash & this.mask]! += hash >>> 31 === 1 ? -value : value;
    }
    return normalise(vector);
  }
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
 * Embeds each distinct text once: the last `capacity` texts and their vectors are kept (least
 * recently used out). Agents repeat themselves (the same prompt, tool call or answer in session
 * after session), so this saves CPU with the local embedder and money with a paid backend.
 * Vectors handed out are shared: callers must not modify them.
 */
export class CachingEmbedder implements Embedder {
  private readonly cache = new Map<string, Float32Array>();

  constructor(
    readonly inner: Embedder,
    private readonly capacity = 5000,
  ) {}

  get model(): string {
    return this.inner.model;
  }

  get dimensions(): number {
    return this.inner.dimensions;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const result: (Float32Array | undefined)[] = texts.map((text) => {
      const hit = this.cache.get(text);
      if (hit !== undefined) {
        this.cache.delete(text);
        this.cache.set(text, hit);
      }
      return hit;
    });
    const missing = [...new Set(texts.filter((_, i) => result[i] === undefined))];
    if (missing.length > 0) {
      const vectors = await this.inner.embed(missing);
      const fresh = new Map(missing.map((text, i) => [text, vectors[i]!]));
      texts.forEach((text, i) => {
        if (result[i] === undefined) result[i] = fresh.get(text);
      });
      for (const [text, vector] of fresh) {
        if (text.length > MAX_EMBED_CHARS) continue;
        this.cache.set(text, vector);
        if (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value as string);
      }
    }
    return result as Float32Array[];
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
