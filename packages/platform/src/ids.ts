import { uuidv7 } from 'uuidv7';

/** Sortable unique id (UUIDv7): ids created later sort later. */
export function newId(): string {
  return uuidv7();
}
