// When an engine counts as wedged: it holds work and has finished no decode for longer than a bound
// that follows what the decode in progress should cost. A slow decode is not a wedge (a 2,048-token
// branch on two CPU cores takes tens of seconds, a long lane's longer), so the bound is a floor plus
// ten times the fitted cost of the decode that is running; between decodes, when a healthy
// scheduler plans the next in microseconds, the floor alone. Until a decode has been measured there
// is no cost to go by, and the floor is all.
import type { NativeStats } from './native.js';

/** How many times a decode's expected cost it may take before it is not merely slow. */
export const SLOW_DECODE_FACTOR = 10;

export function livenessBoundMs(stats: Pick<NativeStats, 'cost' | 'stepTokens' | 'stepRows'>, floorMs: number): number {
  const { perDecodeMs, perTokenMs, perRowMs } = stats.cost;
  const expected = stats.stepTokens > 0 ? perDecodeMs + perTokenMs * stats.stepTokens + perRowMs * stats.stepRows : 0;
  return floorMs + SLOW_DECODE_FACTOR * expected;
}
