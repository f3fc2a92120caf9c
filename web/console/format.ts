// One way to show times, numbers and probabilities across the console.

/** "2026-11-03 14:05 UTC": stored times are UTC, and the usage days are UTC days too. */
export function dateTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function date(iso: string): string {
  const parsed = new Date(iso);
  return Number.isNaN(parsed.getTime()) ? iso : parsed.toISOString().slice(0, 10);
}

export function percent(p: number): string {
  return `${(p * 100).toFixed(1)}%`;
}

/** "+0.016", "-0.025": a difference whose sign is the point, at `digits` decimals. */
export function signed(x: number, digits = 3): string {
  const size = Math.abs(x).toFixed(digits);
  if (Number(size) === 0) return size;
  return `${x > 0 ? '+' : '-'}${size}`;
}

export function duration(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** A <time> element: readable text, machine-readable datetime. */
export function timeElement(iso: string, text: string): HTMLTimeElement {
  const el = document.createElement('time');
  el.dateTime = iso;
  el.textContent = text;
  return el;
}
