// Calibration fitting and metrics as pure functions, on synthetic outcomes with known answers.
import t from 'tap';
import {
  applyFit,
  calibrationFrom,
  confidenceBand,
  crossValidated,
  describeFit,
  fitKind,
  fitPlatt,
  fitPrior,
  fitTemperature,
  type Sample,
} from '../../src/decision/calibration.js';
import { metrics } from '../../src/decision/scoring-rules.js';
import { drawFrom, seededRandom } from '../../bench/lib/random.js';

/**
 * Samples whose true probabilities are `truth` but which the "model" reports overconfidently: its
 * log-probabilities are the true ones times `sharpen` (a temperature of 1/sharpen undoes it).
 */
function overconfident(n: number, options: number, sharpen: number, seed = 1): Sample[] {
  const r = seededRandom(seed);
  return Array.from({ length: n }, () => {
    const logits = Array.from({ length: options }, () => r() * 3);
    const exps = logits.map((l) => Math.exp(l));
    const sum = exps.reduce((a, b) => a + b, 0);
    const real = exps.map((e) => e / sum);
    const truth = drawFrom(real, r());
    const sharp = logits.map((l) => Math.exp(l * sharpen));
    const s2 = sharp.reduce((a, b) => a + b, 0);
    return { kind: options === 2 ? 'noul' : 'choice', p: sharp.map((x) => x / s2), truth } as Sample;
  });
}

t.test('temperature scaling recovers the temperature that undoes overconfidence', async (t) => {
  const samples = overconfident(4000, 4, 2.5);
  const fit = fitTemperature(samples);
  t.equal(fit.method, 'temperature');
  if (fit.method === 'temperature') t.ok(Math.abs(fit.temperature - 2.5) < 0.25, `T = ${fit.temperature}`);
  const after = metrics(samples.map((s) => ({ p: applyFit(fit, s.p), truth: s.truth })));
  t.ok(after.ece < metrics(samples).ece / 2, `ECE ${metrics(samples).ece} → ${after.ece}`);
});

t.test('temperature keeps the ranking: the chosen answer never changes', async (t) => {
  const p = [0.5, 0.3, 0.2];
  for (const temperature of [0.3, 1, 4]) {
    const q = applyFit({ method: 'temperature', temperature }, p);
    t.ok(q[0]! > q[1]! && q[1]! > q[2]!, `T=${temperature}: ${q.join(', ')}`);
    t.ok(Math.abs(q.reduce((a, b) => a + b, 0) - 1) < 1e-12);
  }
});

t.test('Platt scaling undoes a bias towards yes', async (t) => {
  const r = seededRandom(7);
  // The model says P(yes) = 0.8 whatever happens; yes is true 40% of the time.
  const samples: Sample[] = Array.from({ length: 500 }, () => ({ kind: 'noul', p: [0.8, 0.2], truth: r() < 0.4 ? 0 : 1 }));
  const fit = fitPlatt(samples);
  const yes = applyFit(fit, [0.8, 0.2])[0]!;
  t.ok(Math.abs(yes - 0.4) < 0.05, `calibrated P(yes) ${yes}`);
});

/**
 * Scores whose level is drawn from a distribution peaked around a random centre, reported by a
 * "model" that knows that distribution but adds a fixed bias towards level 3 (the label bias the
 * public sentiment data shows).
 */
function biasedScale(n: number, seed: number, levels = 5): Sample[] {
  const r = seededRandom(seed);
  const softmax = (logits: number[]) => {
    const exps = logits.map((l) => Math.exp(l));
    const sum = exps.reduce((a, b) => a + b, 0);
    return exps.map((e) => e / sum);
  };
  return Array.from({ length: n }, () => {
    const centre = Math.floor(r() * levels);
    const logits = Array.from({ length: levels }, (_, i) => -Math.abs(i - centre) * 1.5);
    const truth = drawFrom(softmax(logits), r());
    return { kind: 'score', p: softmax(logits.map((l, i) => l + (i === 3 ? 2 : 0))), truth } as Sample;
  });
}

t.test('a label prior read off the answers alone undoes a bias towards one level', async (t) => {
  const samples = biasedScale(1000, 5);
  const fit = fitPrior(samples.map((s) => ({ ...s, truth: 0 })));
  t.equal(fit.method, 'prior');
  if (fit.method !== 'prior') return;
  t.equal(fit.options, 5);
  const prior = fit.logPrior.map(Math.exp);
  t.ok(
    prior.every((x, i) => i === 3 || x < prior[3]!),
    `level 3 carries the bias: ${prior.map((x) => x.toFixed(2)).join(' ')}`,
  );
  const before = metrics(samples);
  const fitted = fitPrior(samples);
  const after = metrics(samples.map((s) => ({ p: applyFit(fitted, s.p)!, truth: s.truth })));
  t.ok(after.rps < before.rps && after.accuracy > before.accuracy, `RPS ${before.rps} → ${after.rps}, accuracy ${before.accuracy} → ${after.accuracy}`);
  t.equal(applyFit(fit, [0.5, 0.5]), null, 'a question of another level count is left as read');
  t.match(describeFit(fit), /^prior (\d\.\d\d\/){4}\d\.\d\d \(5 options\), T=/);
  const mixed = [...samples.slice(0, 30), ...biasedScale(10, 6, 3)];
  const modal = fitPrior(mixed);
  t.ok(modal.method === 'prior' && modal.options === 5, 'fitted on the most common level count');
});

t.test('fitKind picks the prior for a biased scale, and temperature where there is no bias', async (t) => {
  const report = fitKind('score', biasedScale(600, 9));
  t.equal(report.fit?.method, 'prior', report.refused ?? describeFit(report.fit!));
  t.ok(report.after!.rps < report.before.rps, 'judged by RPS held out');
  const unbiased = fitKind('choice', overconfident(600, 3, 3, 11));
  t.equal(unbiased.fit?.method, 'temperature', 'without a label bias the one-parameter map wins held out');
});

t.test('fitKind: fits an overconfident model, judged on held-out folds', async (t) => {
  const report = fitKind('choice', overconfident(600, 3, 3, 11));
  t.ok(report.fit, report.refused ?? '');
  t.ok(report.after!.ece < report.before.ece);
  t.ok(report.after!.brier <= report.before.brier);
  t.equal(report.after!.n, 600, 'every sample is judged once, held out');
});

t.test('fitKind refuses with too few samples and when nothing improves', async (t) => {
  const few = fitKind('noul', overconfident(10, 2, 2));
  t.equal(few.fit, null);
  t.match(few.refused, /at least 20/);
  // Perfectly confident and always right: no map can improve it.
  const perfect: Sample[] = Array.from({ length: 100 }, (_, i) => ({ kind: 'choice', p: i % 2 ? [1, 0, 0] : [0, 1, 0], truth: i % 2 ? 0 : 1 }));
  const none = fitKind('choice', perfect);
  t.equal(none.fit, null);
  t.match(none.refused, /improved/);
});

t.test('scores are fitted and judged by RPS: a sharpened score distribution is flattened back', async (t) => {
  const samples = overconfident(600, 5, 4, 7).map((s): Sample => ({ ...s, kind: 'score' }));
  const report = fitKind('score', samples);
  t.ok(report.fit?.method === 'temperature' && report.fit.temperature > 2, JSON.stringify(report.fit));
  t.ok(report.after!.rps < report.before.rps, `held-out RPS ${report.before.rps} → ${report.after!.rps}`);
  t.ok(report.after!.ece < report.before.ece, `held-out ECE ${report.before.ece} → ${report.after!.ece}`);
  const perfect: Sample[] = Array.from({ length: 60 }, (_, i) => ({ kind: 'score', p: [0, 0, 0, 0, 0].map((_, j) => (j === i % 5 ? 1 : 0)), truth: i % 5 }));
  t.match(fitKind('score', perfect).refused, /held-out RPS/, 'the refusal names the rule');
});

t.test('cross-validation never lets a sample judge a map fitted on itself', async (t) => {
  const samples = overconfident(50, 2, 2, 3);
  let seen = 0;
  crossValidated(samples, (fit) => {
    seen += fit.length;
    return { method: 'temperature', temperature: 1 };
  });
  t.equal(seen, 50 * 4, 'each of 5 folds fits on the other 4/5');
});

t.test('bands and the applied calibration', async (t) => {
  t.equal(confidenceBand([0.9, 0.1]), 'high');
  t.equal(confidenceBand([0.7, 0.2, 0.1]), 'leaning');
  t.equal(confidenceBand([0.5, 0.5]), 'low');
  const c = calibrationFrom({
    version: 'L2.abc.1',
    model_sha256: 'abc',
    layout: 'L2',
    created_at: '',
    source: '',
    reports: [],
    fits: { choice: { method: 'temperature', temperature: 2 } },
  });
  t.equal(c.version, 'L2.abc.1');
  t.equal(c.method, 'temperature');
  t.equal(c.apply('noul', [0.9, 0.1]), null, 'a kind without a fit stays uncalibrated');
  const softened = c.apply('choice', [0.8, 0.2])!;
  t.ok(softened[0]! < 0.8 && softened[0]! > 0.5);
});
