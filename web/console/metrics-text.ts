// Just enough of the Prometheus text exposition format to read the engines page's headline numbers.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?/gy;

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const [, name = '', labelText = '', value = ''] = match;
    const labels: Record<string, string> = {};
    LABEL.lastIndex = 0;
    for (let m = LABEL.exec(labelText); m; m = LABEL.exec(labelText)) labels[m[1] ?? ''] = unescape(m[2] ?? '');
    samples.push({ name, labels, value: parseValue(value) });
  }
  return samples;
}

/** The sum of every sample of `name` whose labels include all of `where`. */
export function sumOf(samples: Sample[], name: string, where: Record<string, string> = {}): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name || !Number.isFinite(s.value)) continue;
    if (Object.entries(where).every(([k, v]) => s.labels[k] === v)) total += s.value;
  }
  return total;
}
