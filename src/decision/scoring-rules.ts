// How right a set of labelled probability forecasts is. Log loss, Brier and the ranked probability
// score are proper scoring rules: a forecaster minimises them only by reporting what it believes,
// so they judge every transform between the model and the client (a hit rate does not: sharpening
// raises it while the probabilities stop meaning what they say). ECE, the reliability bins and the
// overconfidence say how far the top answer's probability is from its hit rate.
import { argmax } from './readout.js';

/** One labelled forecast: a distribution over the options and the index of the true one. */
export interface Forecast {
  p: number[];
  truth: number;
}

/** Probabilities below this are read as this, so a confident miss costs a bounded 27.6 nats. */
const FLOOR = 1e-12;

/** −ln p(truth), in nats. */
export function logLoss(f: Forecast): number {
  return -Math.log(Math.max(f.p[f.truth]!, FLOOR));
}

/** Σᵢ (pᵢ − yᵢ)² over the options (for yes/no: twice the binary Brier score). */
export function brier(f: Forecast): number {
  return f.p.reduce((acc, x, i) => acc + (x - (i === f.truth ? 1 : 0)) ** 2, 0);
}

/**
 * Ranked probability score of an ordered scale: the squared distance between the forecast's and
 * the truth's cumulative distributions, over the n − 1 thresholds, divided by n − 1 so that scales
 * of 2 to 10 levels share one range [0, 1]. A miss by two levels costs more than a miss by one.
 */
export function rps(f: Forecast): number {
  const n = f.p.length;
  let cumulative = 0;
  let sum = 0;
  for (let k = 0; k < n - 1; k++) {
    cumulative += f.p[k]!;
    sum += (cumulative - (f.truth <= k ? 1 : 0)) ** 2;
  }
  return sum / (n - 1);
}

/** A reliability bin: forecasts whose top probability fell in [lo, lo + 0.1). */
export interface ReliabilityBin {
  lo: number;
  n: number;
  /** Mean top probability in the bin (NaN when empty). */
  confidence: number;
  /** Share of the bin's top answers that are right (NaN when empty). */
  accuracy: number;
}

export const BINS = 10;

/** The top answer's probability against its hit rate, in 10 equal-width bins. */
export function reliability(forecasts: Forecast[]): ReliabilityBin[] {
  const bins = Array.from({ length: BINS }, (_, i) => ({ lo: i / BINS, n: 0, conf: 0, right: 0 }));
  for (const f of forecasts) {
    const top = argmax(f.p);
    const bin = bins[Math.min(BINS - 1, Math.floor(f.p[top]! * BINS))]!;
    bin.n++;
    bin.conf += f.p[top]!;
    if (top === f.truth) bin.right++;
  }
  return bins.map((b) => ({ lo: b.lo, n: b.n, confidence: b.conf / b.n, accuracy: b.right / b.n }));
}

export interface Metrics {
  n: number;
  /** Share of forecasts whose most probable option is the truth. */
  accuracy: number;
  logLoss: number;
  brier: number;
  /** Meaningful for ordered options (scores) only. */
  rps: number;
  /** Expected calibration error of the top answer's probability, 10 equal-width bins. */
  ece: number;
  /** Mean top probability minus the share of top answers that are right: > 0 claims too much. */
  overconfidence: number;
}

const EMPTY: Metrics = { n: 0, accuracy: 0, logLoss: 0, brier: 0, rps: 0, ece: 0, overconfidence: 0 };

const meanOf = (forecasts: Forecast[], rule: (f: Forecast) => number): number => forecasts.reduce((acc, f) => acc + rule(f), 0) / forecasts.length;

export function metrics(forecasts: Forecast[]): Metrics {
  const n = forecasts.length;
  if (n === 0) return { ...EMPTY };
  const bins = reliability(forecasts).filter((b) => b.n > 0);
  const accuracy = meanOf(forecasts, (f) => (argmax(f.p) === f.truth ? 1 : 0));
  return {
    n,
    accuracy,
    logLoss: meanOf(forecasts, logLoss),
    brier: meanOf(forecasts, brier),
    rps: meanOf(forecasts, rps),
    ece: bins.reduce((acc, b) => acc + (b.n / n) * Math.abs(b.confidence - b.accuracy), 0),
    overconfidence: meanOf(forecasts, (f) => Math.max(...f.p)) - accuracy,
  };
}
