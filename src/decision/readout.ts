// From the answer log-probabilities of each branch to one distribution per question. A branch is
// one distinct ordering of one question; its answers are read in the order shown (position j).
import type { Ordering } from './permutations.js';

export interface PassReading {
  ordering: Ordering;
  /** How many of the requested passes this ordering stands for. */
  weight: number;
  /** Log-probability of each position's answer (its spellings summed). */
  logprobs: number[];
}

/** Softmax over the answers only: the reply is taken to be one of them. */
export function renormalise(logprobs: number[]): number[] {
  const max = Math.max(...logprobs);
  if (!Number.isFinite(max)) return logprobs.map(() => 1 / logprobs.length);
  const exps = logprobs.map((l) => Math.exp(l - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / sum);
}

/** One pass's distribution, indexed by original option rather than by position. */
export function optionDistribution(pass: PassReading): number[] {
  const byPosition = renormalise(pass.logprobs);
  const byOption = new Array<number>(pass.ordering.length).fill(0);
  pass.ordering.forEach((option, position) => {
    byOption[option] = byPosition[position]!;
  });
  return byOption;
}

/** Per option, the pass-weighted mean of f(the option's probability in each pass). */
function weightedMean(passes: PassReading[], f: (p: number) => number): number[] {
  const n = passes[0]!.ordering.length;
  const total = passes.reduce((a, p) => a + p.weight, 0);
  const mean = new Array<number>(n).fill(0);
  for (const pass of passes) {
    optionDistribution(pass).forEach((p, i) => {
      mean[i]! += (f(p) * pass.weight) / total;
    });
  }
  return mean;
}

/** The pass-weighted mean of the per-pass option distributions. */
export function averagePasses(passes: PassReading[]): number[] {
  return weightedMean(passes, (p) => p);
}

/**
 * The pass-weighted geometric mean of the per-pass option distributions, renormalised: log-space
 * pooling. Where a bias multiplies each pass's probabilities by a factor of the position shown,
 * log p = truth + bias(position), and a pair of passes whose positions sum to a constant (a scale
 * read ascending and descending) cancels a linear trend in that bias exactly; the mean of
 * probabilities only damps it. A mean, not the product: the readings are one model reading one
 * text twice, not independent evidence. Measured (bench/RESULTS.md, "Scores that read a scale as a
 * scale"), the product was calibrated on SST-5 dev (overconfidence −0.026 against the mean's −0.155)
 * and overconfident on our own cases (+0.158 against −0.005): how sharp to read is the data's,
 * which a fitted calibration says, not the pooling.
 */
export function geometricPool(passes: PassReading[]): number[] {
  return renormalise(weightedMean(passes, (p) => Math.log(Math.max(p, 1e-12))));
}

/**
 * The share of the model's next-token distribution that fell on the answers, pass-weighted: near 1
 * when the model was about to answer with a label, low when it meant to say something else.
 */
export function labelMass(passes: PassReading[]): number {
  const total = passes.reduce((a, p) => a + p.weight, 0);
  const mass = passes.reduce((acc, p) => acc + p.weight * p.logprobs.reduce((s, l) => s + Math.exp(l), 0), 0) / total;
  return Math.min(1, mass);
}

/** The unpermuted pass: the one whose ordering is the identity. */
export function identityPass(passes: PassReading[]): PassReading {
  const pass = passes.find((p) => p.ordering.every((option, position) => option === position));
  if (!pass) throw new Error('readout needs the unpermuted pass');
  return pass;
}

/** Index of the most probable option; the first of equals. */
export function argmax(p: number[]): number {
  let best = 0;
  p.forEach((x, i) => {
    if (x > p[best]!) best = i;
  });
  return best;
}

export function keyed(keys: string[], values: number[]): Record<string, number> {
  return Object.fromEntries(keys.map((k, i) => [k, values[i]!]));
}

/** p sharpened (T < 1) or flattened (T > 1): pᵢ^(1/T), renormalised; the ranking never changes. */
export function tempered(p: number[], temperature: number): number[] {
  if (temperature === 1) return p;
  return renormalise(p.map((x) => Math.log(Math.max(x, 1e-12)) / temperature));
}
