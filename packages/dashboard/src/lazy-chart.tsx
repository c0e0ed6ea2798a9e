import { lazy, Suspense } from 'react';
import type { ChartProps } from './chart.tsx';

// chart.js is fetched only when a page draws a chart; sign-in and lists load without it.
const ChartView = lazy(() => import('./chart.tsx'));

export function Chart(props: ChartProps) {
  return (
    <Suspense fallback={<div className="chart chart-loading" style={{ height: props.height ?? 220 }} aria-hidden="true" />}>
      <ChartView {...props} />
    </Suspense>
  );
}

export type { ChartProps } from './chart.tsx';
