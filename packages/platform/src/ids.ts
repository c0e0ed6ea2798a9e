import { uuidv7obj } from 'uuidv7';

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
/** newId's text before it becomes a string (newId never awaits, so one buffer serves every call). */
const idText = Buffer.alloc(36);

/**
 * Sortable unique id (UUIDv7): ids created later sort later. The package's generator (timestamp,
 * counter, randomness), written as its 8-4-4-4-12 lower-case hex in one string: the package's own
 * toString appends 40 pieces, about 1.5 KB of intermediate strings per id, on every ingested event.
 */
export function newId(): string {
  const bytes = uuidv7obj().bytes;
  let at = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) idText[at++] = 0x2d; // '-'
    idText[at++] = HEX_DIGITS[bytes[i]! >>> 4]!;
    idText[at++] = HEX_DIGITS[bytes[i]! & 0xf]!;
  }
  return idText.toString('latin1', 0, 36);
}
