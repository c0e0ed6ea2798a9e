import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerBenchmarkRoutes } from './routes.ts';

export type { BenchmarksTables } from './tables.ts';

export const benchmarksFeature: ObserveFeature = defineFeature('benchmarks', ({ app, context }) => registerBenchmarkRoutes(app, context));
