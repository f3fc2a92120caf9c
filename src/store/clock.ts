// UTC calendar helpers shared by usage, quotas and the account summary.

export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function utcMonth(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** Whole seconds until the next midnight UTC, at least 1. */
export function secondsToUtcMidnight(ms: number): number {
  const d = new Date(ms);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - ms) / 1000));
}

/** Whole seconds until the first of next month, UTC, at least 1. */
export function secondsToUtcMonthEnd(ms: number): number {
  const d = new Date(ms);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - ms) / 1000));
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The end (epoch ms) of the fixed window of `seconds` that holds `ms`; windows start on multiples of their length. */
export function windowEnd(ms: number, seconds: number): number {
  const length = seconds * 1000;
  return (Math.floor(ms / length) + 1) * length;
}
