// Allowed: frozen history uses a stored format (through its index.ts), which never changes.
import { recipe } from '../stored-formats/index.ts';

export const formatted = recipe;
