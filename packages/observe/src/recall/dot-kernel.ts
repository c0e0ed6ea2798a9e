/**
 * The inner loop of search: dot products of one query with a block of vectors, in WebAssembly
 * SIMD (four float lanes, two accumulators), with a plain JavaScript fallback where SIMD is not
 * available or the length is not a multiple of 4. The module is assembled here from its opcodes
 * (about 150 bytes), so there is no build step and no dependency.
 *
 * (func $dots (param $vec i32) (param $query i32) (param $dims i32) (param $count i32) (param $out i32)
 *   ;; out[i] = Σ_d vec[i·dims + d] · query[d] for i < count
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
const I32_CONST = 0x41;
const I32_ADD = 0x6a;
const I32_SHL = 0x74;
const I32_GE_U = 0x4f;
const F32_ADD = 0x92;
const F32_STORE = 0x38;
const BLOCK = 0x02;
const LOOP = 0x03;
const VOID = 0x40;
const BR = 0x0c;
const BR_IF = 0x0d;
const END = 0x0b;
const SIMD = 0xfd;
const V128_LOAD = [SIMD, 0x00, 0x04, 0x00]; // align 2^4, offset 0
const V128_ZERO = [SIMD, 0x0c, ...new Array<number>(16).fill(0)];
const F32X4_ADD = [SIMD, ...uleb(0xe4)];
const F32X4_MUL = [SIMD, ...uleb(0xe6)];
const F32X4_EXTRACT = (lane: number): number[] => [SIMD, 0x1f, lane];
const I32 = 0x7f;
const V128 = 0x7b;

// Parameters 0..4, then locals: 5 i, 6 j, 7 rowBytes, 8 acc, 9 acc2.
const [VEC, QUERY, DIMS, COUNT, OUT, I, J, ROW_BYTES, ACC, ACC2] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

function assemble(): Uint8Array<ArrayBuffer> {
  const get = (local: number): number[] => [LOCAL_GET, local];
  const set = (local: number): number[] => [LOCAL_SET, local];
  const load = (base: number, extra: number): number[] => [...get(base), ...get(J), I32_ADD, ...V128_LOAD.slice(0, 2), 0x04, ...uleb(extra)];
  const body = [
    ...get(DIMS),
    I32_CONST,
    2,
    I32_SHL,
    ...set(ROW_BYTES),
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
    BLOCK,
    VOID,
    LOOP,
    VOID,
    ...get(J),
    ...get(ROW_BYTES),
    I32_GE_U,
    BR_IF,
    1,
    // acc += vec[j..j+4) * query[j..j+4); acc2 += the next four (rows are a multiple of 8 floats, or the tail is handled below).
    ...get(ACC),
    ...load(VEC, 0),
    ...load(QUERY, 0),
    ...F32X4_MUL,
    ...F32X4_ADD,
    ...set(ACC),
    ...get(J),
    I32_CONST,
    16,
    I32_ADD,
    ...set(J),
    ...get(J),
    ...get(ROW_BYTES),
    I32_GE_U,
    BR_IF,
    1,
    ...get(ACC2),
    ...load(VEC, 0),
    ...load(QUERY, 0),
    ...F32X4_MUL,
    ...F32X4_ADD,
    ...set(ACC2),
    ...get(J),
    I32_CONST,
    16,
    I32_ADD,
    ...set(J),
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
    ...F32X4_ADD,
    ...set(ACC),
    ...get(ACC),
    ...F32X4_EXTRACT(0),
    ...get(ACC),
    ...F32X4_EXTRACT(1),
    F32_ADD,
    ...get(ACC),
    ...F32X4_EXTRACT(2),
    F32_ADD,
    ...get(ACC),
    ...F32X4_EXTRACT(3),
    F32_ADD,
    F32_STORE,
    0x02,
    0x00,
    ...get(VEC),
    ...get(ROW_BYTES),
    I32_ADD,
    ...set(VEC),
    ...get(I),
    I32_CONST,
    1,
    I32_ADD,
    ...set(I),
    BR,
    0,
    END,
    END,
    END,
  ];
  const locals = [2, 3, I32, 2, V128];
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

/** Whether blocks of this length use the SIMD kernel. */
export function simdAvailable(dims: number): boolean {
  return dims % 4 === 0 && simdModule() !== null;
}

/**
 * Storage for `capacity` vectors of `dims` floats plus what a scan needs: `vectors` is written by
 * the index, `dots(query, count)` returns the dot products of the first `count` vectors with
 * `query` (valid until the next call).
 */
export class VectorBlock {
  readonly vectors: Float32Array;
  private readonly query: Float32Array;
  private readonly scores: Float32Array;
  private readonly kernel: ((count: number) => void) | null;

  constructor(
    private readonly dims: number,
    readonly capacity: number,
  ) {
    const module = simdAvailable(dims) ? simdModule() : null;
    const queryOffset = capacity * dims * 4;
    const outOffset = queryOffset + dims * 4;
    let memory: WebAssembly.Memory | null = null;
    try {
      // Each memory reserves address space; where that is refused (a tight ulimit -v) the block is plain JavaScript.
      if (module) memory = new WebAssembly.Memory({ initial: Math.ceil((outOffset + capacity * 4) / 65536) });
    } catch {
      memory = null;
    }
    if (module && memory) {
      const instance = new WebAssembly.Instance(module, { env: { memory } });
      const dots = instance.exports.dots as (vec: number, query: number, dims: number, count: number, out: number) => void;
      this.vectors = new Float32Array(memory.buffer, 0, capacity * dims);
      this.query = new Float32Array(memory.buffer, queryOffset, dims);
      this.scores = new Float32Array(memory.buffer, outOffset, capacity);
      this.kernel = (count) => dots(0, queryOffset, dims, count, outOffset);
    } else {
      this.vectors = new Float32Array(capacity * dims);
      this.query = new Float32Array(dims);
      this.scores = new Float32Array(capacity);
      this.kernel = null;
    }
  }

  dots(query: Float32Array, count: number): Float32Array {
    this.query.set(query);
    if (this.kernel) {
      this.kernel(count);
      return this.scores;
    }
    const { vectors, dims, scores } = this;
    const q = this.query;
    for (let slot = 0; slot < count; slot++) {
      let offset = slot * dims;
      const end = offset + dims;
      let a = 0;
      let b = 0;
      let c = 0;
      let d = 0;
      let k = 0;
      for (; offset + 3 < end; offset += 4, k += 4) {
        a += vectors[offset]! * q[k]!;
        b += vectors[offset + 1]! * q[k + 1]!;
        c += vectors[offset + 2]! * q[k + 2]!;
        d += vectors[offset + 3]! * q[k + 3]!;
      }
      for (; offset < end; offset++, k++) a += vectors[offset]! * q[k]!;
      scores[slot] = a + b + c + d;
    }
    return scores;
  }
}
