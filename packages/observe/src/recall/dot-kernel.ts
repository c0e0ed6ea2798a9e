/**
 * The inner loop of search: integer dot products of one quantised query with a block of int8
 * vectors (the codes as stored, the platform's encodeVector), in WebAssembly SIMD, with a plain
 * JavaScript fallback where SIMD is not available. Both compute the same integers exactly, so they
 * agree to the bit. The module is assembled here from its opcodes (about 260 bytes), so there is
 * no build step and no dependency.
 *
 * (func $dots (param $codes i32) (param $query i32) (param $stride i32) (param $count i32) (param $out i32)
 *   ;; out[i] = Σ_d codes[i·stride + d] · query[d] for i < count (i8 codes, i16 query, i32 sums):
 *   ;; per 16 codes, i16x8.extend_low/high_i8x16_s, then i32x4.dot_i16x8_s with 8 query values each
 * )
 */

const uleb = (value: number): number[] => {
  const bytes: number[] = [];
  let v = value >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    bytes.push(byte);
  } while (v !== 0);
  return bytes;
};
const name = (text: string): number[] => [...uleb(text.length), ...Buffer.from(text, 'utf8')];
const section = (id: number, content: number[]): number[] => [id, ...uleb(content.length), ...content];

// Opcodes.
const LOCAL_GET = 0x20;
const LOCAL_SET = 0x21;
const LOCAL_TEE = 0x22;
const I32_CONST = 0x41;
const I32_ADD = 0x6a;
const I32_SHL = 0x74;
const I32_GE_U = 0x4f;
const I32_STORE = [0x36, 0x02, 0x00]; // align 2^2, offset 0
const BLOCK = 0x02;
const LOOP = 0x03;
const VOID = 0x40;
const BR = 0x0c;
const BR_IF = 0x0d;
const END = 0x0b;
const SIMD = 0xfd;
const V128_LOAD = (offset: number): number[] => [SIMD, 0x00, 0x04, ...uleb(offset)]; // align 2^4
const V128_ZERO = [SIMD, 0x0c, ...new Array<number>(16).fill(0)];
const I16X8_EXTEND_LOW_I8X16_S = [SIMD, ...uleb(0x87)];
const I16X8_EXTEND_HIGH_I8X16_S = [SIMD, ...uleb(0x88)];
const I32X4_ADD = [SIMD, ...uleb(0xae)];
const I32X4_DOT_I16X8_S = [SIMD, ...uleb(0xba)];
const I32X4_EXTRACT = (lane: number): number[] => [SIMD, 0x1b, lane];
const I32 = 0x7f;
const V128 = 0x7b;

/** Codes per SIMD step: rows are padded with zeros to a multiple of this. */
const STEP = 16;

// Parameters 0..4, then locals: 5 i, 6 j, 7 queryAt, 8 v, 9 acc, 10 acc2.
const [CODES, QUERY, STRIDE, COUNT, OUT, I, J, QUERY_AT, V, ACC, ACC2] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

function assemble(): Uint8Array<ArrayBuffer> {
  const get = (local: number): number[] => [LOCAL_GET, local];
  const set = (local: number): number[] => [LOCAL_SET, local];
  const increment = (local: number, by: number): number[] => [...get(local), I32_CONST, ...uleb(by), I32_ADD, ...set(local)];
  const body = [
    BLOCK,
    VOID,
    LOOP,
    VOID,
    ...get(I),
    ...get(COUNT),
    I32_GE_U,
    BR_IF,
    1,
    ...V128_ZERO,
    ...set(ACC),
    ...V128_ZERO,
    ...set(ACC2),
    I32_CONST,
    0,
    ...set(J),
    ...get(QUERY),
    ...set(QUERY_AT),
    BLOCK,
    VOID,
    LOOP,
    VOID,
    ...get(J),
    ...get(STRIDE),
    I32_GE_U,
    BR_IF,
    1,
    // v = 16 codes; acc += dot(low 8 codes as i16, query[j..j+8)); acc2 += dot(high 8, query[j+8..j+16)).
    ...get(CODES),
    ...get(J),
    I32_ADD,
    ...V128_LOAD(0),
    LOCAL_TEE,
    V,
    ...I16X8_EXTEND_LOW_I8X16_S,
    ...get(QUERY_AT),
    ...V128_LOAD(0),
    ...I32X4_DOT_I16X8_S,
    ...get(ACC),
    ...I32X4_ADD,
    ...set(ACC),
    ...get(V),
    ...I16X8_EXTEND_HIGH_I8X16_S,
    ...get(QUERY_AT),
    ...V128_LOAD(16),
    ...I32X4_DOT_I16X8_S,
    ...get(ACC2),
    ...I32X4_ADD,
    ...set(ACC2),
    ...increment(J, STEP),
    ...increment(QUERY_AT, STEP * 2),
    BR,
    0,
    END,
    END,
    // out[i] = horizontal sum of acc + acc2
    ...get(OUT),
    ...get(I),
    I32_CONST,
    2,
    I32_SHL,
    I32_ADD,
    ...get(ACC),
    ...get(ACC2),
    ...I32X4_ADD,
    ...set(ACC),
    ...get(ACC),
    ...I32X4_EXTRACT(0),
    ...get(ACC),
    ...I32X4_EXTRACT(1),
    I32_ADD,
    ...get(ACC),
    ...I32X4_EXTRACT(2),
    I32_ADD,
    ...get(ACC),
    ...I32X4_EXTRACT(3),
    I32_ADD,
    ...I32_STORE,
    ...get(CODES),
    ...get(STRIDE),
    I32_ADD,
    ...set(CODES),
    ...increment(I, 1),
    BR,
    0,
    END,
    END,
    END,
  ];
  const locals = [2, 3, I32, 3, V128];
  const code = [...uleb(locals.length + body.length), ...locals, ...body];
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]),
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 0x01]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('dots'), 0x00, 0]),
    ...section(10, [1, ...code]),
  ]);
}

let compiled: WebAssembly.Module | null | undefined;

/** The SIMD module, or null where WebAssembly SIMD is unavailable. */
function simdModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      const bytes = assemble();
      compiled = WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/** Whether blocks use the SIMD kernel (any length: rows are padded to a multiple of 16). */
export function simdAvailable(): boolean {
  return simdModule() !== null;
}

/**
 * A query as the kernel takes it: query ≈ codes × scale, with codes in i16 (each value within
 * scale / 2). Kept at 16 bits rather than quantised to int8 like the vectors: the kernel costs
 * the same (the vector's codes are widened to i16 anyway), and the query's own rounding becomes
 * about 258 times smaller than the vector's, so the scan's scores are those of the stored int8
 * vectors against the Float32 query within that (scanError). The largest code keeps every sum
 * within i32: |Σ code·query| ≤ dims · 128 · limit < 2^31, so no lane and no total can wrap.
 */
export interface QueryCodes {
  codes: Int16Array;
  scale: number;
  /** Σ |codes| × scale: the L1 norm of the quantised query. */
  l1: number;
  /** ‖codes × scale − query‖₂: how far the quantised query lies from the query. */
  rounding: number;
}

/** The largest |code| of a query of `dims` dimensions (32,767 up to 512 dimensions; 10,922 at 1,536). */
export function queryCodeLimit(dims: number): number {
  return Math.min(32767, Math.floor(0x7fffffff / (128 * Math.max(1, dims))));
}

export function quantiseQuery(query: Float32Array): QueryCodes {
  const limit = queryCodeLimit(query.length);
  let max = 0;
  for (let d = 0; d < query.length; d++) max = Math.max(max, Math.abs(query[d]!));
  const scale = max / limit;
  const codes = new Int16Array(query.length);
  let l1 = 0;
  let rounding = 0;
  if (scale > 0) {
    for (let d = 0; d < query.length; d++) {
      const code = Math.max(-limit, Math.min(limit, Math.round(query[d]! / scale)));
      codes[d] = code;
      l1 += Math.abs(code);
      rounding += (code * scale - query[d]!) ** 2;
    }
  }
  return { codes, scale, l1: l1 * scale, rounding: Math.sqrt(rounding) };
}

/** Slack for the Float32 arithmetic of the vectors themselves (normalised; the scale as stored). */
const FLOAT_SLACK = 1e-6;

/**
 * How far the exact cosine q·v of two unit vectors (as every embedder returns) may lie from the
 * scan's score q̃·v̂, where q̃ = the query's codes × its scale and v̂ = the vector's codes × `scale`
 * (each code v_d / scale rounded to the nearest, so |v̂_d − v_d| ≤ scale / 2):
 *   q̃·v̂ − q·v = q̃·(v̂ − v) + (q̃ − q)·v, at most ‖q̃‖₁ · scale / 2 + ‖q̃ − q‖₂ · ‖v‖₂.
 * A bound, not an estimate. The first term is the vector's rounding (about 0.004 for a three-word
 * query against a vector of the local embedder), the second the query's (i16: under 0.0001).
 */
export function scanError(query: QueryCodes, scale: number): number {
  return (query.l1 * scale) / 2 + query.rounding + FLOAT_SLACK;
}

/**
 * Storage for `capacity` vectors of `dims` int8 codes (one WebAssembly memory, rows of `stride`
 * bytes, zero-padded) and their Float32 scales, plus what a scan needs: `dots(query, count)`
 * returns Σ code·queryCode for the first `count` rows (valid until the next call); a row's cosine
 * is that × its scale × the query's scale.
 */
export class VectorBlock {
  readonly codes: Int8Array;
  readonly scales: Float32Array;
  readonly stride: number;
  private readonly query: Int16Array;
  private readonly sums: Int32Array;
  private readonly kernel: ((count: number) => void) | null;

  constructor(
    private readonly dims: number,
    readonly capacity: number,
    /** false: the JavaScript loop even where SIMD is available (the test compares the two). */
    simd = true,
  ) {
    this.stride = Math.ceil(dims / STEP) * STEP;
    this.scales = new Float32Array(capacity);
    const module = simd ? simdModule() : null;
    const queryOffset = capacity * this.stride;
    const outOffset = queryOffset + this.stride * 2;
    let memory: WebAssembly.Memory | null = null;
    try {
      // Each memory reserves address space; where that is refused (a tight ulimit -v) the block is plain JavaScript.
      if (module) memory = new WebAssembly.Memory({ initial: Math.ceil((outOffset + capacity * 4) / 65536) });
    } catch {
      memory = null;
    }
    if (module && memory) {
      const instance = new WebAssembly.Instance(module, { env: { memory } });
      const dots = instance.exports.dots as (codes: number, query: number, stride: number, count: number, out: number) => void;
      this.codes = new Int8Array(memory.buffer, 0, capacity * this.stride);
      this.query = new Int16Array(memory.buffer, queryOffset, this.stride);
      this.sums = new Int32Array(memory.buffer, outOffset, capacity);
      const stride = this.stride;
      this.kernel = (count) => dots(0, queryOffset, stride, count, outOffset);
    } else {
      this.codes = new Int8Array(capacity * this.stride);
      this.query = new Int16Array(this.stride);
      this.sums = new Int32Array(capacity);
      this.kernel = null;
    }
  }

  dots(query: QueryCodes, count: number): Int32Array {
    this.query.set(query.codes);
    if (this.kernel) {
      this.kernel(count);
      return this.sums;
    }
    const { codes, dims, stride, sums } = this;
    const q = this.query;
    for (let slot = 0; slot < count; slot++) {
      const row = slot * stride;
      // Integers below 2^31 (queryCodeLimit): exact in a double, the same sum as the kernel's.
      let sum = 0;
      for (let d = 0; d < dims; d++) sum += codes[row + d]! * q[d]!;
      sums[slot] = sum;
    }
    return sums;
  }
}
