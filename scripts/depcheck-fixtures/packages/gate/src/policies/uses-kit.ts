// Breaks test-kit-only-in-tests (and feature-uses-shared-src-root): product code imports a test kit.
import { TEST_KEY } from '../testing.ts';

export const key = TEST_KEY;
