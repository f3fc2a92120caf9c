// The ECE a perfectly calibrated forecaster would show on the same forecasts. Measured on a finite
// set, ECE is biased upwards: each bin's hit rate is a sample, and its distance from the bin's
// confidence is never negative. So truths are drawn from the forecasts themselves (each forecast
// then is exactly right about its own chances) and ECE is measured on them, many times: a measured
// ECE near this floor is as calibrated as the set can tell.
import { metrics, type Forecast } from '../../src/decision/scoring-rules.js';

/** A deterministic pseudo-random stream, so the floor is the same on every run. */
function rng(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

function draw(p: number[], u: number): number {
  for (let i = 0; i < p.length; i++) if ((u -= p[i]!) < 0) return i;
  return p.length - 1;
}

/** Mean ECE over `draws` sets of truths drawn from the forecasts. */
export function eceFloor(forecasts: readonly Pick<Forecast, 'p'>[], draws = 200, seed = 1): number {
  if (forecasts.length === 0) return NaN;
  const next = rng(seed);
  let sum = 0;
  for (let d = 0; d < draws; d++) sum += metrics(forecasts.map((f) => ({ p: f.p, truth: draw(f.p, next()) }))).ece;
  return sum / draws;
}
