// Allowed: a test uses the test kit. (The test runner skips this fixture tree.)
import { TEST_KEY } from '../testing.ts';

export const used = TEST_KEY;
