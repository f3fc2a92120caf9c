// The usage chart: requests and rate-limited requests per UTC day as bars, redrawn to its
// container's width whenever that changes.
import uPlot from './vendor/uPlot.esm.js';

export interface DailySeries {
  /** "YYYY-MM-DD", UTC, consecutive. */
  days: string[];
  requests: number[];
  rateLimited: number[];
}

const HEIGHT = 240;
const MIN_WIDTH = 260;

/** Draws `data` into `container`; returns how to stop observing and free the chart. */
export function drawUsageChart(container: HTMLElement, data: DailySeries): () => void {
  const xs = data.days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
  const width = (): number => Math.max(MIN_WIDTH, Math.floor(container.clientWidth));
  const bars = uPlot.paths.bars;
  const wholeNumbers = (_u: uPlot, splits: number[]): string[] => splits.map((v) => (Number.isInteger(v) ? String(v) : ''));
  const options: uPlot.Options = {
    width: width(),
    height: HEIGHT,
    // The days are UTC days: label them in UTC, not in the browser's zone.
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    scales: {
      // Half a day either side, so the first and last days' bars are drawn whole.
      x: { time: true, range: (_u, min, max) => [min - 43_200, max + 43_200] },
      y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
    },
    axes: [{ stroke: '#3e4c59' }, { stroke: '#3e4c59', values: wholeNumbers }],
    series: [
      { label: 'Day (UTC)' },
      {
        label: 'Requests',
        stroke: '#1d4ed8',
        fill: 'rgba(29, 78, 216, 0.55)',
        width: 1,
        points: { show: false },
        ...(bars ? { paths: bars({ size: [0.7, 40], align: 0 }) } : {}),
      },
      {
        label: 'Rate limited',
        stroke: '#b45309',
        fill: 'rgba(180, 83, 9, 0.85)',
        width: 1,
        points: { show: false },
        ...(bars ? { paths: bars({ size: [0.35, 20], align: 0 }) } : {}),
      },
    ],
  };
  const plot = new uPlot(options, [xs, data.requests, data.rateLimited], container);
  const observer = new ResizeObserver(() => {
    const next = width();
    if (next !== plot.width) plot.setSize({ width: next, height: HEIGHT });
  });
  observer.observe(container);
  return () => {
    observer.disconnect();
    plot.destroy();
  };
}
