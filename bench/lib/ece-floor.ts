// The ECE a perfectly calibrated forecaster would show on the same forecasts. Measured on a finite
// set, ECE is biased upwards: each bin's hit rate is a sample, and its distance from the bin's
// confidence is never negative. So truths are drawn from the forecasts themselves (each forecast
// then is exactly right about its own chances) and ECE is measured on them, many times: a measured
// ECE near this floor is as calibrated as the set can tell.
import { metrics, type Forecast } from '../../src/decision/scoring-rules.js';
import { drawFrom, seededRandom } from './random.js';

/** Mean ECE over `draws` sets of truths drawn from the forecasts. */
export function eceFloor(forecasts: readonly Pick<Forecast, 'p'>[], draws = 200, seed = 1): number {
  if (forecasts.length === 0) return NaN;
  // Seeded, so the floor is the same on every run.
  const next = seededRandom(seed);
  let sum = 0;
  for (let d = 0; d < draws; d++) sum += metrics(forecasts.map((f) => ({ p: f.p, truth: drawFrom(f.p, next()) }))).ece;
  return sum / draws;
}
