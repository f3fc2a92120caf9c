// Calibration from observed outcomes: fitting, choosing and applying a per-question-kind map from
// the model's (debiased) probabilities to calibrated ones, judged by proper scoring rules (scoring-rules.ts).
//
// Methods. Temperature scaling divides every log-probability by T and renormalises: one
// parameter, it keeps the ranking (the chosen answer never changes) and fits every kind. Platt
// scaling, for yes/no only, maps the log-odds of yes through a·x + b: it can also undo a bias
// towards one answer. A prior, for choices and scores, divides out the mean distribution the
// model gave over the fitted questions of one option count (a label bias read off its own answers,
// without their truths: batch calibration, Zhou et al. 2024), then fits a temperature; questions of
// another option count are left as read. Each is fitted and judged by the kind's proper scoring rule (the ranked
// probability score for scores, log loss otherwise), held out: the fitter keeps the method that
// scores best on samples it was not fitted on, and none at all when none beats leaving the
// probabilities alone without making their Brier score worse.
import type { ConfidenceBand } from './schema/answers.js';
import type { KindName } from './kinds/index.js';
import { renormalise, tempered } from './readout.js';
import { logLoss, metrics, rps, type Forecast, type Metrics } from './scoring-rules.js';

/** One labelled decision: the probabilities the model gave (per option) and the true option. */
export interface Sample {
  kind: KindName;
  p: number[];
  truth: number;
}

export type KindFit =
  | { method: 'temperature'; temperature: number }
  | { method: 'platt'; a: number; b: number }
  | { method: 'prior'; options: number; logPrior: number[]; temperature: number };

export interface KindReport {
  kind: KindName;
  /** Held-out (cross-validated) figures without and with the fitted map. */
  before: Metrics;
  after: Metrics | null;
  fit: KindFit | null;
  /** Why no map was kept, when none was. */
  refused: string | null;
}

/** A fitted calibration as it is stored and applied. */
export interface CalibrationRecord {
  version: string;
  model_sha256: string;
  layout: string;
  created_at: string;
  source: string;
  fits: Partial<Record<KindName, KindFit>>;
  reports: KindReport[];
}

/**
 * Which calibration answers are served with: none, the newest `arbitra calibrate` fitted for the
 * served model, or the one shipped with the package for it (src/decision/calibration-presets.ts).
 */
export type CalibrationMode = 'off' | 'fitted' | 'preset';

/** Confidence bands on the calibrated probability of the answer given. */
export const BANDS = { high: 0.85, leaning: 0.65 } as const;

export function confidenceBand(p: number[]): Exclude<ConfidenceBand, null> {
  const top = Math.max(...p);
  return top >= BANDS.high ? 'high' : top >= BANDS.leaning ? 'leaning' : 'low';
}

const EPS = 1e-12;

/** p through a fitted map; null where the map does not apply (a prior fitted on another option count). */
export function applyFit(fit: Exclude<KindFit, { method: 'prior' }>, p: number[]): number[];
export function applyFit(fit: KindFit, p: number[]): number[] | null;
export function applyFit(fit: KindFit, p: number[]): number[] | null {
  if (fit.method === 'temperature') return tempered(p, fit.temperature);
  if (fit.method === 'prior') return p.length === fit.options ? divideOut(p, fit.logPrior, fit.temperature) : null;
  const x = Math.log(Math.max(p[0]!, EPS)) - Math.log(Math.max(p[1]!, EPS));
  const yes = 1 / (1 + Math.exp(-(fit.a * x + fit.b)));
  return [yes, 1 - yes];
}

/** A fit in a few words, as the CLI's table and the benches print it. */
export function describeFit(fit: KindFit, digits = 2): string {
  if (fit.method === 'temperature') return `T=${fit.temperature.toFixed(digits)}`;
  if (fit.method === 'platt') return `platt a=${fit.a.toFixed(digits)} b=${fit.b.toFixed(digits)}`;
  const prior = fit.logPrior.map((l) => Math.exp(l).toFixed(digits)).join('/');
  return `prior ${prior} (${fit.options} options), T=${fit.temperature.toFixed(digits)}`;
}

/** p divided by a prior (given as log-probabilities), then raised to 1/T and renormalised. */
function divideOut(p: number[], logPrior: number[], temperature: number): number[] {
  return renormalise(p.map((x, i) => (Math.log(Math.max(x, EPS)) - logPrior[i]!) / temperature));
}

/** What decide() applies: null for a kind without a fit, which then stays uncalibrated. */
export interface Calibration {
  version: string;
  method: string;
  apply(kind: KindName, p: number[]): number[] | null;
}

export function calibrationFrom(record: CalibrationRecord): Calibration {
  const methods = [...new Set(Object.values(record.fits).map((f) => f.method))].sort();
  return {
    version: record.version,
    method: methods.join('+') || 'none',
    apply: (kind, p) => {
      const fit = record.fits[kind];
      return fit ? applyFit(fit, p) : null;
    },
  };
}

/** A proper scoring rule: per forecast, and its mean as `metrics` reports it. */
export interface Rule {
  name: string;
  score: (f: Forecast) => number;
  of: (m: Metrics) => number;
}

const RPS: Rule = { name: 'RPS', score: rps, of: (m) => m.rps };
const LOG_LOSS: Rule = { name: 'log loss', score: logLoss, of: (m) => m.logLoss };

/** The rule a kind is judged by: scores are ordered, so a miss by two levels costs more than by one. */
export function ruleFor(kind: KindName): Rule {
  return kind === 'score' ? RPS : LOG_LOSS;
}

/** The mean of the samples' rule, read through a map. */
function loss(samples: Sample[], map: (p: number[]) => number[]): number {
  const rule = ruleFor(samples[0]?.kind ?? 'noul');
  return samples.reduce((acc, s) => acc + rule.score({ p: map(s.p), truth: s.truth }), 0) / Math.max(1, samples.length);
}

/** Temperature by golden-section search on log T over [1/20, 20], minimising the kind's rule (unimodal in it). */
export function fitTemperature(samples: Sample[]): Extract<KindFit, { method: 'temperature' }> {
  return { method: 'temperature', temperature: bestTemperature(samples, tempered) };
}

/** The T minimising the kind's rule over the samples read through map(p, T). */
function bestTemperature(samples: Sample[], map: (p: number[], temperature: number) => number[]): number {
  const at = (logT: number) => loss(samples, (p) => map(p, Math.exp(logT)));
  let lo = Math.log(0.05);
  let hi = Math.log(20);
  const g = (Math.sqrt(5) - 1) / 2;
  let c = hi - g * (hi - lo);
  let d = lo + g * (hi - lo);
  for (let i = 0; i < 80; i++) {
    if (at(c) < at(d)) hi = d;
    else lo = c;
    c = hi - g * (hi - lo);
    d = lo + g * (hi - lo);
  }
  return Math.exp((lo + hi) / 2);
}

/**
 * The label prior of the most common option count among the samples: the log of their mean
 * distribution (no truth is read), then the temperature that the kind's rule prefers after it.
 */
export function fitPrior(samples: Sample[]): KindFit {
  const counts = new Map<number, number>();
  for (const s of samples) counts.set(s.p.length, (counts.get(s.p.length) ?? 0) + 1);
  const options = [...counts].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]![0];
  const same = samples.filter((s) => s.p.length === options);
  const mean = new Array<number>(options).fill(0);
  for (const s of same) s.p.forEach((x, i) => (mean[i]! += x / same.length));
  const logPrior = mean.map((m) => Math.log(Math.max(m, EPS)));
  return { method: 'prior', options, logPrior, temperature: bestTemperature(same, (p, t) => divideOut(p, logPrior, t)) };
}

/** Platt scaling of the yes log-odds by Newton's method on the logistic likelihood (lightly regularised). */
export function fitPlatt(samples: Sample[]): Extract<KindFit, { method: 'platt' }> {
  const xs = samples.map((s) => Math.log(Math.max(s.p[0]!, EPS)) - Math.log(Math.max(s.p[1]!, EPS)));
  const ys = samples.map((s) => (s.truth === 0 ? 1 : 0));
  let a = 1;
  let b = 0;
  const ridge = 1e-3;
  for (let iter = 0; iter < 50; iter++) {
    let ga = ridge * (a - 1);
    let gb = ridge * b;
    let haa = ridge;
    let hab = 0;
    let hbb = ridge;
    xs.forEach((x, i) => {
      const q = 1 / (1 + Math.exp(-(a * x + b)));
      const r = q - ys[i]!;
      const w = Math.max(q * (1 - q), 1e-9);
      ga += r * x;
      gb += r;
      haa += w * x * x;
      hab += w * x;
      hbb += w;
    });
    const det = haa * hbb - hab * hab;
    if (Math.abs(det) < 1e-12) break;
    const da = (hbb * ga - hab * gb) / det;
    const db = (haa * gb - hab * ga) / det;
    a -= da;
    b -= db;
    if (Math.abs(da) + Math.abs(db) < 1e-10) break;
  }
  return { method: 'platt', a, b };
}

/** Deterministic fold of a sample: spread by index so every fold sees every kind of sample. */
function folds<T>(items: T[], k: number): { fit: T[]; held: T[] }[] {
  return Array.from({ length: k }, (_, f) => ({
    fit: items.filter((_, i) => i % k !== f),
    held: items.filter((_, i) => i % k === f),
  }));
}

/** Each sample read through a map fitted without it (k-fold): what a fitter does to unseen data. */
export function heldOut(samples: Sample[], fitter: (s: Sample[]) => KindFit, k = 5): Forecast[] {
  const judged: Forecast[] = [];
  for (const { fit, held } of folds(samples, k)) {
    const map = fitter(fit);
    for (const s of held) judged.push({ p: applyFit(map, s.p) ?? s.p, truth: s.truth });
  }
  return judged;
}

/** Held-out figures of a fitter. */
export function crossValidated(samples: Sample[], fitter: (s: Sample[]) => KindFit, k = 5): Metrics {
  return metrics(heldOut(samples, fitter, k));
}

/** The fitter of each method, as fitKind tries them. */
export const FITTERS: Record<KindFit['method'], (s: Sample[]) => KindFit> = { temperature: fitTemperature, platt: fitPlatt, prior: fitPrior };

/** The methods tried for a kind: a yes/no's bias is Platt's intercept; choices and scores have a label prior. */
const METHODS_FOR: Record<KindName, KindFit['method'][]> = {
  noul: ['temperature', 'platt'],
  choice: ['temperature', 'prior'],
  score: ['temperature', 'prior'],
  box: ['temperature'],
};

export const MIN_SAMPLES = 20;

/**
 * A richer map must beat a simpler one held out by this share of the rule to be chosen over it: a
 * prior's extra parameters win small margins by chance on samples without any label bias.
 */
const PARSIMONY = 0.01;

/**
 * Fits one kind: every candidate method is judged by cross-validation under the kind's rule; the
 * simplest within PARSIMONY of the best is kept if it beats no calibration held out without a
 * worse Brier score, then refitted on all samples.
 */
export function fitKind(kind: KindName, samples: Sample[]): KindReport {
  const before = metrics(samples);
  if (samples.length < MIN_SAMPLES) {
    return { kind, before, after: null, fit: null, refused: `${samples.length} labelled samples; at least ${MIN_SAMPLES} are needed` };
  }
  const rule = ruleFor(kind);
  const fitters = METHODS_FOR[kind].map((method) => FITTERS[method]);
  const judged = fitters.map((fitter) => ({ fitter, after: crossValidated(samples, fitter) }));
  const lowest = Math.min(...judged.map((j) => rule.of(j.after)));
  const best = judged.find((j) => rule.of(j.after) <= lowest + PARSIMONY * Math.abs(lowest))!;
  if (!(rule.of(best.after) < rule.of(before) - 1e-9) || best.after.brier > before.brier) {
    return { kind, before, after: best.after, fit: null, refused: `no method improved held-out ${rule.name} without a worse Brier score` };
  }
  return { kind, before, after: best.after, fit: best.fitter(samples), refused: null };
}
