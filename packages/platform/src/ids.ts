import { randomFillSync } from 'node:crypto';
import { V7Generator } from 'uuidv7';

/**
 * The generator's randomness, drawn from the CSPRNG 4 KiB at a time: the package's default refills
 * 32 bytes through crypto.getRandomValues every few ids, a call that cost each gate request
 * creation (two ids) more than its SHA-256s.
 */
class BufferedRandom {
  private readonly words = new Uint32Array(1024);
  private next = this.words.length;

  nextUint32(): number {
    if (this.next === this.words.length) {
      randomFillSync(this.words);
      this.next = 0;
    }
    return this.words[this.next++]!;
  }
}

const generator = new V7Generator(new BufferedRandom());

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
/** newId's text before it becomes a string (newId never awaits, so one buffer serves every call). */
const idText = Buffer.alloc(36);

/**
 * Sortable unique id (UUIDv7): ids created later sort later. The package's generator (timestamp,
 * counter, randomness), written as its 8-4-4-4-12 lower-case hex in one string: the package's own
 * toString appends 40 pieces, about 1.5 KB of intermediate strings per id, on every ingested event.
 */
export function newId(): string {
  const bytes = generator.generate().bytes;
  let at = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) idText[at++] = 0x2d; // '-'
    idText[at++] = HEX_DIGITS[bytes[i]! >>> 4]!;
    idText[at++] = HEX_DIGITS[bytes[i]! & 0xf]!;
  }
  return idText.toString('latin1', 0, 36);
}
