import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
  type ChartConfiguration,
} from 'chart.js';
import { useEffect, useEffectEvent, useRef } from 'react';
import { cssColor, useTheme } from './theme.ts';

// Only the pieces the dashboard draws, so the bundle stays small (this module is loaded lazily).
Chart.register(LineController, LineElement, PointElement, BarController, BarElement, CategoryScale, LinearScale, Filler, Legend, Tooltip);

export interface Series {
  label: string;
  data: (number | null)[];
  /** A colour variable of styles.css (`--chart-blue`): each scheme defines its own. */
  color: `--chart-${string}`;
  /** Draw on the right-hand axis. */
  right?: boolean;
}

export interface ChartProps {
  /** `interval`: each series' values as points over the 95 % intervals of `intervals` (a benchmark's variants). */
  kind: 'line' | 'bar' | 'interval';
  labels: string[];
  series: Series[];
  /** With `interval`: the interval per label, drawn as a thin floating bar behind the point (null: none). */
  intervals?: ([lower: number, upper: number] | null)[];
  /** Read by screen readers instead of the drawing. */
  description: string;
  height?: number;
  yLabel?: string;
  rightLabel?: string;
  format?: (value: number) => string;
  max?: number;
}

export default function ChartView({ kind, labels, series, intervals, description, height = 220, yLabel, rightLabel, format, max }: ChartProps) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart | null>(null);
  // The latest formatter, read when the chart draws: a new function each render must not redraw the chart.
  const formatLatest = useEffectEvent((value: number) => format!(value));
  const hasFormat = format !== undefined;
  // Callers build new arrays each render: the chart is redrawn only when their contents change.
  const dataKey = JSON.stringify({ labels, series, intervals });
  const theme = useTheme();

  useEffect(() => {
    if (!canvas.current) return;
    const { labels, series, intervals } = JSON.parse(dataKey) as Pick<ChartProps, 'labels' | 'series' | 'intervals'>;
    const hasRight = series.some((s) => s.right);
    // The scheme's colours, read now: the chart is redrawn when the scheme changes.
    const text = cssColor('--muted');
    const grid = cssColor('--border');
    const axis = { ticks: { color: text }, grid: { color: grid }, title: { color: text } };
    const points = kind === 'interval';
    const intervalColor = series[0] ? cssColor(series[0].color) : text;
    const config: ChartConfiguration = {
      type: points ? 'bar' : kind,
      data: {
        labels,
        datasets: [
          ...(points && intervals
            ? [
                {
                  type: 'bar' as const,
                  label: '95% interval',
                  data: intervals,
                  backgroundColor: `${intervalColor}55`,
                  borderColor: intervalColor,
                  borderWidth: 1,
                  barPercentage: 0.2,
                  maxBarThickness: 28,
                  order: 2,
                },
              ]
            : []),
          ...series.map((s) => ({
            ...(points && { type: 'line' as const, showLine: false, pointRadius: 6, pointHoverRadius: 7, pointStyle: 'rectRot' as const, order: 1 }),
            label: s.label,
            data: s.data,
            borderColor: cssColor(s.color),
            backgroundColor: kind === 'bar' ? cssColor(s.color) : `${cssColor(s.color)}22`,
            fill: kind === 'line' && series.length === 1,
            tension: 0.25,
            ...(!points && { pointRadius: labels.length > 48 ? 0 : 2 }),
            borderWidth: 2,
            spanGaps: true,
            yAxisID: s.right ? 'right' : 'y',
          })),
        ],
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        plugins: {
          legend: { display: series.length > 1 || points, position: 'bottom', labels: { boxWidth: 12, color: text } },
          tooltip: hasFormat
            ? {
                callbacks: {
                  label: (item) =>
                    `${item.dataset.label ?? ''}: ${Array.isArray(item.raw) ? item.raw.map((v) => formatLatest(Number(v))).join(' … ') : formatLatest(Number(item.raw))}`,
                },
              }
            : {},
        },
        scales: {
          x: { ticks: { maxTicksLimit: 8, maxRotation: 0, color: text }, grid: { display: false } },
          y: {
            beginAtZero: true,
            ...(max !== undefined && { max }),
            grid: axis.grid,
            title: { ...axis.title, display: Boolean(yLabel), text: yLabel ?? '' },
            ticks: hasFormat ? { ...axis.ticks, callback: (value) => formatLatest(Number(value)) } : axis.ticks,
          },
          ...(hasRight && {
            right: {
              position: 'right' as const,
              beginAtZero: true,
              grid: { drawOnChartArea: false },
              ticks: axis.ticks,
              title: { ...axis.title, display: Boolean(rightLabel), text: rightLabel ?? '' },
            },
          }),
        },
      },
    };
    chart.current?.destroy();
    chart.current = new Chart(canvas.current, config);
    return () => {
      chart.current?.destroy();
      chart.current = null;
    };
  }, [kind, dataKey, yLabel, rightLabel, max, hasFormat, theme]);

  return (
    <div className="chart" style={{ height }}>
      <canvas ref={canvas} role="img" aria-label={description} />
    </div>
  );
}
