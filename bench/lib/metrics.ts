// Reads the server's Prometheus text: the benches only need a metric's total over its labels.

/** The sum of every sample of `name`, or null when the server does not export it. */
export function metricTotal(text: string, name: string): number | null {
  let total: number | null = null;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line.trim());
    if (m && m[1] === name) total = (total ?? 0) + Number(m[2]);
  }
  return total;
}
