// Allowed: a test uses another feature's test kit. (The test runner skips this fixture tree.)
import { sampleEvent } from '../events/test-fixtures.ts';

export const used = sampleEvent;
