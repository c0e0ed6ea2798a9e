import { offsetPage, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import {
  benchmarkListSchema,
  benchmarkParams,
  benchmarkSchema,
  createBenchmarkBodySchema,
  listBenchmarksQuerySchema,
  resultsQuerySchema,
  resultsSchema,
  statusBodySchema,
} from './schemas.ts';
import { benchmarkDetail, benchmarkResults, changeStatus, removeBenchmark, toListItem } from './service.ts';
import { findBenchmark, insertBenchmark, listBenchmarks } from './store.ts';

export function registerBenchmarkRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/benchmarks',
    routeOptions('admin', {
      operationId: 'createBenchmark',
      summary: 'Create an A/B benchmark (status draft)',
      tags: ['benchmarks'],
      body: createBenchmarkBodySchema,
      response: { 201: benchmarkSchema },
    }),
    async (request, reply) => {
      const benchmark = await insertBenchmark(ctx.database, request.body, ctx.clock.now());
      return reply.status(201).send(await benchmarkDetail(ctx.database.db, benchmark));
    },
  );

  app.get(
    '/api/benchmarks',
    routeOptions('read', {
      operationId: 'listBenchmarks',
      summary: 'List benchmarks, newest first',
      tags: ['benchmarks'],
      querystring: listBenchmarksQuerySchema,
      response: { 200: benchmarkListSchema },
    }),
    async (request) => offsetPage('benchmarks', await listBenchmarks(ctx.database, request.query), request.query.offset, toListItem),
  );

  app.get(
    '/api/benchmarks/:id',
    routeOptions('read', {
      operationId: 'getBenchmark',
      summary: 'One benchmark, with the number of sessions of each variant',
      tags: ['benchmarks'],
      params: benchmarkParams,
      response: { 200: benchmarkSchema },
    }),
    async (request) => {
      const benchmark = await findBenchmark(ctx.database.db, request.params.id);
      if (!benchmark) throw observeError('benchmarkNotFound');
      return benchmarkDetail(ctx.database.db, benchmark);
    },
  );

  app.put(
    '/api/benchmarks/:id/status',
    routeOptions('admin', {
      operationId: 'setBenchmarkStatus',
      errorStatuses: [409],
      summary: 'Move a benchmark through draft → running → completed (or cancelled)',
      description: 'A move outside the state table (draft → running or cancelled; running → completed or cancelled) is a 409.',
      tags: ['benchmarks'],
      params: benchmarkParams,
      body: statusBodySchema,
      response: { 200: benchmarkSchema },
    }),
    async (request) => changeStatus(ctx, request.params.id, request.body.status),
  );

  app.get(
    '/api/benchmarks/:id/results',
    routeOptions('read', {
      operationId: 'getBenchmarkResults',
      summary: 'Statistical comparison of the variants (cached once completed)',
      description: '400 while the benchmark is a draft. How the variants are compared: docs/api.md, *Benchmarks*.',
      tags: ['benchmarks'],
      params: benchmarkParams,
      querystring: resultsQuerySchema,
      response: { 200: resultsSchema },
    }),
    async (request) => benchmarkResults(ctx, request.params.id, request.query.includeDistributions),
  );

  app.delete(
    '/api/benchmarks/:id',
    routeOptions('admin', {
      operationId: 'deleteBenchmark',
      errorStatuses: [409],
      summary: 'Delete a draft or cancelled benchmark',
      description: 'A running or completed benchmark is a 409.',
      tags: ['benchmarks'],
      params: benchmarkParams,
      response: { 204: z.null().describe('Deleted: no body') },
    }),
    async (request, reply) => {
      await removeBenchmark(ctx, request.params.id);
      return reply.status(204).send(null);
    },
  );
}
