// The built-in embedder, kept free of other imports: it also runs on a worker thread (embed-thread.ts).

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
