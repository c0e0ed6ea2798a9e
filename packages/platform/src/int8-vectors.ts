// Stored embedding vectors: int8 codes with one scale per vector. A storage format, so it never
// changes: observe's recall writes and reads every vector with it, and observe's frozen migration
// 0019 converted the Float32 vectors stored before it with this very encoding (another format would
// be a new module and a migration of its own). It lives in the kernel so that both may import it:
// a frozen migration step imports no feature code.

/** Bytes before the codes of a stored vector: the Float32 scale, little-endian. */
const SCALE_BYTES = 4;
const bitmapBytes = (dims: number): number => Math.ceil(dims / 8);

/**
 * A vector as stored: int8 scalar quantisation with one scale per vector, value ≈ code × scale
 * with scale = max |value| / 127. On unit vectors a cosine computed from the codes differs from
 * the exact one by a few thousandths (a search re-scores its best candidates exactly).
 * Two layouts, whichever is shorter:
 * - dense: the scale (Float32 little-endian), then one signed byte per dimension (4 + dims bytes);
 * - sparse: the scale, a bitmap of the non-zero codes (bit i of byte i/8, dims/8 bytes), then the
 *   non-zero codes in dimension order. The local embedder hashes a short text's features into
 *   few of its 512 buckets (a one-line tool call or answer: about 80), so a short text's vector
 *   takes ~150 bytes instead of 516.
 * Either decodes to the same values; a dense vector is exactly 4 + dims bytes long.
 */
export function encodeVector(vector: Float32Array): Buffer {
  const dims = vector.length;
  let max = 0;
  for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(vector[i]!));
  // The scale as stored (Float32): codes are rounded against it, so decoding reproduces what was quantised.
  const scale = Math.fround(max / 127);
  if (codeScratch.length < dims) codeScratch = new Int8Array(dims);
  const codes = codeScratch;
  let nonZero = 0;
  for (let i = 0; i < dims; i++) {
    const code = scale > 0 ? Math.max(-127, Math.min(127, Math.round(vector[i]! / scale))) : 0;
    codes[i] = code;
    if (code !== 0) nonZero += 1;
  }
  if (bitmapBytes(dims) + nonZero >= dims) {
    const stored = Buffer.alloc(SCALE_BYTES + dims);
    stored.writeFloatLE(scale, 0);
    stored.set(codes.subarray(0, dims), SCALE_BYTES);
    return stored;
  }
  const stored = Buffer.alloc(SCALE_BYTES + bitmapBytes(dims) + nonZero);
  stored.writeFloatLE(scale, 0);
  let at = SCALE_BYTES + bitmapBytes(dims);
  for (let i = 0; i < dims; i++) {
    if (codes[i] === 0) continue;
    stored[SCALE_BYTES + (i >> 3)]! |= 1 << (i & 7);
    stored[at++] = codes[i]! & 0xff;
  }
  return stored;
}

/** encodeVector's codes before they are laid out (it never awaits, so one buffer serves every call). */
let codeScratch = new Int8Array(512);

/** Whether `stored` is a vector of `dims` dimensions in one of encodeVector's layouts. */
export function isStoredVector(stored: Uint8Array, dims: number): boolean {
  if (stored.byteLength === SCALE_BYTES + dims) return true;
  const codes = stored.byteLength - SCALE_BYTES - bitmapBytes(dims);
  if (codes < 0 || codes >= dims) return false;
  let set = 0;
  for (let i = SCALE_BYTES; i < SCALE_BYTES + bitmapBytes(dims); i++) for (let byte = stored[i]!; byte !== 0; byte &= byte - 1) set += 1;
  return set === codes;
}

/**
 * Copies the int8 codes of a stored vector of `dims` dimensions into `target` (at `offset`; a
 * sparse vector's zeros are written too) and returns its scale: value ≈ code × scale.
 */
export function readCodesInto(stored: Uint8Array, dims: number, target: Int8Array, offset: number): number {
  const scale = new DataView(stored.buffer, stored.byteOffset, SCALE_BYTES).getFloat32(0, true);
  const codes = new Int8Array(stored.buffer, stored.byteOffset, stored.byteLength);
  if (stored.byteLength === SCALE_BYTES + dims) {
    target.set(codes.subarray(SCALE_BYTES), offset);
    return scale;
  }
  // Only the set bits are visited, lowest first (dimension order), so a short text's ~80 codes cost ~80 steps.
  target.fill(0, offset, offset + dims);
  let at = SCALE_BYTES + bitmapBytes(dims);
  for (let byte = 0; byte < bitmapBytes(dims); byte++) {
    for (let bits = stored[SCALE_BYTES + byte]!; bits !== 0; bits &= bits - 1) {
      target[offset + byte * 8 + 31 - Math.clz32(bits & -bits)] = codes[at++]!;
    }
  }
  return scale;
}

/** Dequantises a stored vector of `dims` dimensions. */
export function decodeVector(stored: Uint8Array, dims: number): Float32Array {
  const codes = new Int8Array(dims);
  const scale = readCodesInto(stored, dims, codes, 0);
  return Float32Array.from(codes, (code) => code * scale);
}
