// Calibration from observed outcomes: fitting, choosing and applying a per-question-kind map from
// the model's (debiased) probabilities to calibrated ones, and the metrics that judge it.
//
// Methods. Temperature scaling divides every log-probability by T and renormalises: one
// parameter, it keeps the ranking (the chosen answer never changes) and fits every kind. Platt
// scaling, for yes/no only, maps the log-odds of yes through a·x + b: it can also undo a bias
// towards one answer. Each is fitted by maximum likelihood; the fitter keeps the one whose
// cross-validated ECE and Brier are best, and none at all when neither beats leaving the
// probabilities alone.
import type { ConfidenceBand } from './schema/answers.js';
import type { KindName } from './kinds/index.js';
import { argmax, tempered } from './readout.js';

/** One labelled decision: the probabilities the model gave (per option) and the true option. */
export interface Sample {
  kind: KindName;
  p: number[];
  truth: number;
}

export type KindFit = { method: 'temperature'; temperature: number } | { method: 'platt'; a: number; b: number };

export interface Metrics {
  n: number;
  /** Expected calibration error of the top answer's probability, 10 equal-width bins. */
  ece: number;
  /** Mean Σᵢ (pᵢ − yᵢ)² over the options (for yes/no: 2 × the binary Brier score). */
  brier: number;
  accuracy: number;
}

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

/** Confidence bands on the calibrated probability of the answer given. */
export const BANDS = { high: 0.85, leaning: 0.65 } as const;

export function confidenceBand(p: number[]): Exclude<ConfidenceBand, null> {
  const top = Math.max(...p);
  return top >= BANDS.high ? 'high' : top >= BANDS.leaning ? 'leaning' : 'low';
}

const EPS = 1e-12;

export function applyFit(fit: KindFit, p: number[]): number[] {
  if (fit.method === 'temperature') return tempered(p, fit.temperature);
  const x = Math.log(Math.max(p[0]!, EPS)) - Math.log(Math.max(p[1]!, EPS));
  const yes = 1 / (1 + Math.exp(-(fit.a * x + fit.b)));
  return [yes, 1 - yes];
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

export function metrics(samples: { p: number[]; truth: number }[]): Metrics {
  const n = samples.length;
  if (n === 0) return { n: 0, ece: 0, brier: 0, accuracy: 0 };
  const bins = Array.from({ length: 10 }, () => ({ n: 0, conf: 0, correct: 0 }));
  let brier = 0;
  let correct = 0;
  for (const s of samples) {
    const top = argmax(s.p);
    const conf = s.p[top]!;
    const bin = bins[Math.min(9, Math.floor(conf * 10))]!;
    bin.n++;
    bin.conf += conf;
    if (top === s.truth) {
      bin.correct++;
      correct++;
    }
    brier += s.p.reduce((acc, x, i) => acc + (x - (i === s.truth ? 1 : 0)) ** 2, 0);
  }
  const ece = bins.reduce((acc, b) => acc + (b.n === 0 ? 0 : (b.n / n) * Math.abs(b.conf / b.n - b.correct / b.n)), 0);
  return { n, ece, brier: brier / n, accuracy: correct / n };
}

function nll(samples: Sample[], map: (p: number[]) => number[]): number {
  return samples.reduce((acc, s) => acc - Math.log(Math.max(map(s.p)[s.truth]!, EPS)), 0);
}

/** Temperature by golden-section search on log T over [1/20, 20]: the NLL is unimodal in it. */
export function fitTemperature(samples: Sample[]): KindFit {
  const loss = (logT: number) => nll(samples, (p) => applyFit({ method: 'temperature', temperature: Math.exp(logT) }, p));
  let lo = Math.log(0.05);
  let hi = Math.log(20);
  const g = (Math.sqrt(5) - 1) / 2;
  let c = hi - g * (hi - lo);
  let d = lo + g * (hi - lo);
  for (let i = 0; i < 80; i++) {
    if (loss(c) < loss(d)) hi = d;
    else lo = c;
    c = hi - g * (hi - lo);
    d = lo + g * (hi - lo);
  }
  return { method: 'temperature', temperature: Math.exp((lo + hi) / 2) };
}

/** Platt scaling of the yes log-odds by Newton's method on the logistic likelihood (lightly regularised). */
export function fitPlatt(samples: Sample[]): KindFit {
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

/** Held-out figures of a fitter: each sample is judged by a map fitted without it (k-fold). */
export function crossValidated(samples: Sample[], fitter: (s: Sample[]) => KindFit, k = 5): Metrics {
  const judged: { p: number[]; truth: number }[] = [];
  for (const { fit, held } of folds(samples, k)) {
    const map = fitter(fit);
    for (const s of held) judged.push({ p: applyFit(map, s.p), truth: s.truth });
  }
  return metrics(judged);
}

export const MIN_SAMPLES = 20;

/**
 * Fits one kind: every candidate method is judged by cross-validation; the best by ECE is kept if
 * it improves ECE or Brier and makes neither worse than no calibration, then refitted on all samples.
 */
export function fitKind(kind: KindName, samples: Sample[]): KindReport {
  const before = metrics(samples);
  if (samples.length < MIN_SAMPLES) {
    return { kind, before, after: null, fit: null, refused: `${samples.length} labelled samples; at least ${MIN_SAMPLES} are needed` };
  }
  const fitters = kind === 'noul' ? [fitTemperature, fitPlatt] : [fitTemperature];
  const judged = fitters.map((fitter) => ({ fitter, after: crossValidated(samples, fitter) })).sort((x, y) => x.after.ece - y.after.ece);
  const best = judged[0]!;
  const worse = best.after.ece > before.ece || best.after.brier > before.brier;
  const better = best.after.ece < before.ece - 1e-9 || best.after.brier < before.brier - 1e-9;
  if (worse || !better) {
    return { kind, before, after: best.after, fit: null, refused: 'no method improved held-out ECE or Brier without making the other worse' };
  }
  return { kind, before, after: best.after, fit: best.fitter(samples), refused: null };
}
