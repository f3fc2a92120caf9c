// Proper scoring rules and calibration figures as pure functions, on hand-checked forecasts.
import t, { type Test } from 'tap';
import { brier, logLoss, metrics, reliability, rps } from '../../src/decision/scoring-rules.js';

const close = (t: Test, actual: number, expected: number, what: string) => t.ok(Math.abs(actual - expected) < 1e-12, `${what}: ${actual} vs ${expected}`);

t.test('log loss and Brier of single forecasts', async (t) => {
  close(t, logLoss({ p: [0.25, 0.75], truth: 1 }), -Math.log(0.75), 'log loss');
  t.ok(logLoss({ p: [1, 0], truth: 1 }) < 28, 'a certain miss costs a bounded amount, not Infinity');
  close(t, brier({ p: [0.9, 0.1], truth: 1 }), 0.81 + 0.81, 'Brier over both options');
  close(t, brier({ p: [0.2, 0.3, 0.5], truth: 2 }), 0.04 + 0.09 + 0.25, 'Brier of three options');
});

t.test('RPS: a miss by two levels costs more than a miss by one, and a certain hit costs nothing', async (t) => {
  close(t, rps({ p: [0, 0, 1, 0, 0], truth: 2 }), 0, 'certain and right');
  // cumulative forecast [0, 1, 1, 1] against truth 2's [0, 0, 1, 1]: one threshold wrong, of 4.
  close(t, rps({ p: [0, 1, 0, 0, 0], truth: 2 }), 1 / 4, 'one level off');
  close(t, rps({ p: [1, 0, 0, 0, 0], truth: 2 }), 2 / 4, 'two levels off');
  // cumulative [0.5, 1] against truth 0's [1, 1]: (0.5)² over 2 thresholds.
  close(t, rps({ p: [0.5, 0.5, 0], truth: 0 }), 0.25 / 2, 'hand-checked spread');
  // On two levels RPS is the binary Brier score: half of the two-option Brier.
  close(t, rps({ p: [0.3, 0.7], truth: 0 }), brier({ p: [0.3, 0.7], truth: 0 }) / 2, 'two levels');
});

t.test('metrics: accuracy, ECE, overconfidence and the means of the rules', async (t) => {
  const forecasts = [
    { p: [0.9, 0.1], truth: 0 },
    { p: [0.9, 0.1], truth: 1 },
    { p: [0.3, 0.7], truth: 1 },
  ];
  const m = metrics(forecasts);
  t.equal(m.n, 3);
  close(t, m.accuracy, 2 / 3, 'accuracy');
  // bin 0.9: confidence .9, right .5 (2 forecasts); bin 0.7: confidence .7, right 1 (1 forecast)
  close(t, m.ece, (2 / 3) * 0.4 + (1 / 3) * 0.3, 'ECE');
  close(t, m.brier, (0.02 + 1.62 + 0.18) / 3, 'Brier');
  close(t, m.logLoss, (-Math.log(0.9) - Math.log(0.1) - Math.log(0.7)) / 3, 'log loss');
  close(t, m.overconfidence, (0.9 + 0.9 + 0.7) / 3 - 2 / 3, 'overconfidence');
  t.ok(metrics([{ p: [0.6, 0.4], truth: 1 }]).overconfidence > 0, 'a miss claimed at 0.6 is overconfident');
  t.ok(metrics([{ p: [0.6, 0.4], truth: 0 }]).overconfidence < 0, 'a hit claimed at 0.6 is underconfident');
  t.same(metrics([]), { n: 0, accuracy: 0, logLoss: 0, brier: 0, rps: 0, ece: 0, overconfidence: 0 });
});

t.test('sharpening a spread forecast raises its hit-rate-style confidence and worsens every proper rule', async (t) => {
  // The truth is level 1 or 3 equally often; an honest forecast splits between them.
  const honest = [
    { p: [0.1, 0.4, 0.1, 0.4, 0], truth: 1 },
    { p: [0.1, 0.4, 0.1, 0.4, 0], truth: 3 },
  ];
  const sharp = honest.map((f) => ({ ...f, p: [0, 0.98, 0, 0.02, 0] }));
  const a = metrics(honest);
  const b = metrics(sharp);
  t.ok(b.rps > a.rps, `RPS ${a.rps} → ${b.rps}`);
  t.ok(b.logLoss > a.logLoss, `log loss ${a.logLoss} → ${b.logLoss}`);
  t.ok(b.brier > a.brier, `Brier ${a.brier} → ${b.brier}`);
  t.ok(b.overconfidence > 0.4, `overconfidence ${b.overconfidence}`);
});

t.test('reliability: ten bins by the top probability, empty bins marked empty', async (t) => {
  const bins = reliability([
    { p: [0.95, 0.05], truth: 0 },
    { p: [0.05, 0.95], truth: 0 },
    { p: [0.55, 0.45], truth: 0 },
    { p: [1, 0], truth: 0 },
  ]);
  t.equal(bins.length, 10);
  t.same(
    bins.map((b) => b.n),
    [0, 0, 0, 0, 0, 1, 0, 0, 0, 3],
    'a top probability of exactly 1 falls in the last bin',
  );
  close(t, bins[9]!.accuracy, 2 / 3, 'last bin right');
  close(t, bins[9]!.confidence, (0.95 + 0.95 + 1) / 3, 'last bin confidence');
  t.ok(Number.isNaN(bins[0]!.confidence), 'empty bin has no confidence');
});
