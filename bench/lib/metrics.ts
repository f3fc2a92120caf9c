// Reads the server's Prometheus text: a metric's total over its labels, and histograms (by a label),
// their deltas between two scrapes and quantiles estimated from their buckets.

/** The sum of every sample of `name`, or null when the server does not export it. */
export function metricTotal(text: string, name: string): number | null {
  let total: number | null = null;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line.trim());
    if (m && m[1] === name) total = (total ?? 0) + Number(m[2]);
  }
  return total;
}

/** One sample line: its name, labels and value; null for comments, blanks and what does not parse. */
export function parseSample(line: string): { name: string; labels: Record<string, string>; value: number } | null {
  const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line.trim());
  if (!m) return null;
  const labels: Record<string, string> = {};
  for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
  return { name: m[1]!, labels, value };
}

/** A Prometheus histogram: cumulative counts per upper bound (ascending, +Inf last), its sum and its count. */
export interface Histogram {
  bounds: number[];
  counts: number[];
  sum: number;
  count: number;
}

const emptyLike = (h: Histogram): Histogram => ({ bounds: [...h.bounds], counts: h.counts.map(() => 0), sum: 0, count: 0 });

/**
 * The histograms `name` in a scrape, one per value of the label `by` ('' when `by` is not given),
 * each summed over the series whose labels include all of `where` (other labels, such as a
 * method, are added together).
 */
export function readHistograms(text: string, name: string, by?: string, where: Record<string, string> = {}): Map<string, Histogram> {
  const parts = new Map<string, { buckets: Map<number, number>; sum: number; count: number }>();
  for (const line of text.split('\n')) {
    const s = parseSample(line);
    if (!s || !s.name.startsWith(name) || !Object.entries(where).every(([k, v]) => s.labels[k] === v)) continue;
    const suffix = s.name.slice(name.length);
    if (suffix !== '_bucket' && suffix !== '_sum' && suffix !== '_count') continue;
    const group = by === undefined ? '' : (s.labels[by] ?? '');
    const p = parts.get(group) ?? { buckets: new Map<number, number>(), sum: 0, count: 0 };
    parts.set(group, p);
    if (suffix === '_sum') p.sum += s.value;
    else if (suffix === '_count') p.count += s.value;
    else {
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      p.buckets.set(le, (p.buckets.get(le) ?? 0) + s.value);
    }
  }
  const out = new Map<string, Histogram>();
  for (const [group, p] of parts) {
    const bounds = [...p.buckets.keys()].sort((a, b) => a - b);
    out.set(group, { bounds, counts: bounds.map((b) => p.buckets.get(b)!), sum: p.sum, count: p.count });
  }
  return out;
}

function combine(a: Histogram, b: Histogram, sign: 1 | -1): Histogram {
  if (a.bounds.length !== b.bounds.length || a.bounds.some((x, i) => x !== b.bounds[i]))
    throw new Error('histograms with different buckets cannot be combined');
  return { bounds: [...a.bounds], counts: a.counts.map((c, i) => c + sign * b.counts[i]!), sum: a.sum + sign * b.sum, count: a.count + sign * b.count };
}

/** What was observed between two scrapes of the same process: `after` less `before` (absent before: nothing yet). */
export function histogramDelta(after: Histogram, before?: Histogram): Histogram {
  return combine(after, before ?? emptyLike(after), -1);
}

/** Two histograms of the same buckets added together (`a` absent: `b` alone). */
export function histogramSum(a: Histogram | undefined, b: Histogram): Histogram {
  return combine(a ?? emptyLike(b), b, 1);
}

/** The per-group deltas of two readHistograms() results, groups seen after only counted from zero. */
export function histogramsDelta(after: Map<string, Histogram>, before: Map<string, Histogram>): Map<string, Histogram> {
  return new Map([...after].map(([k, h]) => [k, histogramDelta(h, before.get(k))]));
}

/**
 * The q-quantile (0 to 1) estimated from the buckets the way PromQL's histogram_quantile() does:
 * linear within the bucket that holds it (the first from 0), the largest finite bound when it
 * falls in +Inf; NaN when nothing was observed. Only as fine as the buckets are.
 */
export function histogramQuantile(h: Histogram, q: number): number {
  const total = h.counts[h.counts.length - 1] ?? 0;
  if (total <= 0) return NaN;
  const rank = q * total;
  const i = h.counts.findIndex((c) => c >= rank);
  const upper = h.bounds[i]!;
  if (upper === Infinity) return h.bounds[h.bounds.length - 2] ?? NaN;
  const lower = i === 0 ? 0 : h.bounds[i - 1]!;
  const below = i === 0 ? 0 : h.counts[i - 1]!;
  const inBucket = h.counts[i]! - below;
  return inBucket <= 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
}
