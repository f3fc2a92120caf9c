// Summaries the load benches report: latency percentiles, a sampled series' start/max/end, and
// the time a service took to answer again after a fault. Pure, so test/bench can hold them.

/** Milliseconds as a table cell: whole, or a dash where there was nothing to measure. */
export const ms = (x: number): string => (Number.isNaN(x) ? '–' : x.toFixed(0));

/** Bytes in MiB. */
export const mib = (bytes: number): number => bytes / 2 ** 20;

/** The nearest-rank percentile of an ascending list; NaN when it is empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The arithmetic mean; NaN when the list is empty. */
export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** The middle of a list (the mean of the two middle values when even); NaN when it is empty. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

export function latencySummary(ms: readonly number[]): LatencySummary {
  const sorted = [...ms].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.length ? sorted[sorted.length - 1]! : NaN };
}

export interface SeriesSummary {
  start: number;
  max: number;
  end: number;
}

/** First, largest and last value of a series in time order; NaNs when it is empty. */
export function seriesSummary(values: readonly number[]): SeriesSummary {
  if (values.length === 0) return { start: NaN, max: NaN, end: NaN };
  return { start: values[0]!, max: Math.max(...values), end: values[values.length - 1]! };
}

/** One request sent to see whether the service answers: when it was sent and finished, and whether it succeeded. */
export interface Probe {
  sentAt: number;
  doneAt: number;
  ok: boolean;
}

export interface Recovery {
  /** From the fault until the first success among the probes sent after the last failure; null when the last probe failed or none was sent. */
  ms: number | null;
  probes: number;
  failed: number;
}

/**
 * How long after `faultAt` the service answered again for good. A success that came back while
 * later-sent probes still failed is not a recovery (a restarted process that serves some
 * connections and refuses others), so only probes sent after the last failure count.
 */
export function recoveryAfter(faultAt: number, probes: readonly Probe[]): Recovery {
  const bySend = [...probes].sort((a, b) => a.sentAt - b.sentAt);
  const failed = bySend.filter((p) => !p.ok).length;
  let lastFailure = -1;
  bySend.forEach((p, i) => {
    if (!p.ok) lastFailure = i;
  });
  const after = bySend.slice(lastFailure + 1);
  const ms = after.length === 0 ? null : Math.max(0, Math.min(...after.map((p) => p.doneAt)) - faultAt);
  return { ms, probes: bySend.length, failed };
}

/** A table cell: the number to `digits` places, or a dash where there is none. */
export const fixed = (x: number | null, digits = 3): string => (x === null || Number.isNaN(x) ? '–' : x.toFixed(digits));

/** A share as a table cell, "12.3%". */
export const pct = (x: number | null): string => (x === null || Number.isNaN(x) ? '–' : `${(x * 100).toFixed(1)}%`);

/** A signed difference as a table cell, "+0.012" or "−0.064". */
export const signed = (x: number | null): string => (x === null || Number.isNaN(x) ? '–' : `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(3)}`);
