// From the candidate log-probabilities of each branch to typed answers. A branch is one distinct
// ordering of one question; its candidates are the answer tokens in the order shown (position j).
import type { ChoiceAnswer, NoulAnswer, ScoreAnswer } from '../api/schemas/systemone.js';
import type { Ordering } from './permutations.js';

export interface PassReading {
  ordering: Ordering;
  /** How many of the requested passes this ordering stands for. */
  weight: number;
  /** Log-probability of each position's answer token. */
  logprobs: number[];
}

export interface ReadoutOptions {
  /** Echoed on the answer; null when debias is off. */
  debiasPasses: number | null;
  returnRaw: boolean;
}

/** Softmax over the candidates only: the answer is known to be one of them. */
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

/** The pass-weighted mean of the per-pass option distributions. */
export function averagePasses(passes: PassReading[]): number[] {
  const n = passes[0]!.ordering.length;
  const total = passes.reduce((a, p) => a + p.weight, 0);
  const mean = new Array<number>(n).fill(0);
  for (const pass of passes) {
    optionDistribution(pass).forEach((p, i) => {
      mean[i]! += (p * pass.weight) / total;
    });
  }
  return mean;
}

/** 1 − H(p)/ln(N): 1 when all mass is on one option, 0 when uniform. */
export function concentration(p: number[]): number {
  if (p.length < 2) return 1;
  const h = p.reduce((acc, x) => (x > 0 ? acc - x * Math.log(x) : acc), 0);
  return Math.min(1, Math.max(0, 1 - h / Math.log(p.length)));
}

function keyed(keys: string[], values: number[]): Record<string, number> {
  return Object.fromEntries(keys.map((k, i) => [k, values[i]!]));
}

/** The unpermuted pass: the one whose ordering is the identity. */
function identityPass(passes: PassReading[]): PassReading {
  const pass = passes.find((p) => p.ordering.every((option, position) => option === position));
  if (!pass) throw new Error('readout needs the unpermuted pass');
  return pass;
}

export function readChoice(labels: string[], passes: PassReading[], opts: ReadoutOptions): ChoiceAnswer {
  const p = averagePasses(passes);
  let best = 0;
  p.forEach((x, i) => {
    if (x > p[best]!) best = i;
  });
  return {
    type: 'choice',
    choice: labels[best]!,
    probabilities: keyed(labels, p),
    confidence: concentration(p),
    confidence_band: null,
    raw_probabilities: opts.returnRaw ? keyed(labels, optionDistribution(identityPass(passes))) : null,
    debias_passes: opts.debiasPasses,
  };
}

export function readScore(levels: string[], passes: PassReading[], opts: ReadoutOptions): ScoreAnswer {
  const p = averagePasses(passes);
  const keys = levels.map((_, i) => String(i));
  return {
    type: 'score',
    score: p.reduce((acc, x, i) => acc + x * i, 0),
    legend: Object.fromEntries(levels.map((d, i) => [String(i), d])),
    probabilities: keyed(keys, p),
    confidence: concentration(p),
    confidence_band: null,
    raw_probabilities: opts.returnRaw ? keyed(keys, optionDistribution(identityPass(passes))) : null,
    debias_passes: opts.debiasPasses,
  };
}

/** Noul options are [yes, no]: option 0 is yes. */
export function readNoul(passes: PassReading[], opts: ReadoutOptions): NoulAnswer {
  return {
    type: 'noul',
    noul: averagePasses(passes)[0]!,
    confidence_band: null,
    raw_noul: opts.returnRaw ? optionDistribution(identityPass(passes))[0]! : null,
    debias_passes: opts.debiasPasses,
  };
}
