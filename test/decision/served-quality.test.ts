// /health's model.quality: the figures of what is served, per type, from the served --calibration
// and the record that describes it; a reason where none does.
import t from 'tap';
import type { CalibrationRecord } from '../../src/decision/calibration.js';
import { presetCalibration } from '../../src/decision/calibration-presets.js';
import { LAYOUT_VERSION } from '../../src/decision/prompt.js';
import type { Metrics } from '../../src/decision/scoring-rules.js';
import { NO_FIT, NO_PRESET, servedQuality } from '../../src/decision/served-quality.js';
import { DEFAULT_MODEL } from '../../src/models/catalogue.js';

const m = (n: number, overconfidence: number): Metrics => ({
  n,
  accuracy: 0.5,
  logLoss: 0.7,
  brier: 0.5,
  rps: 0.2,
  ece: Math.abs(overconfidence),
  overconfidence,
});

const preset: CalibrationRecord = {
  version: 'L9.abcdef01.preset',
  model_sha256: 'ab'.repeat(32),
  layout: 'L9',
  created_at: '2026-11-01T00:00:00.000Z',
  source: 'file bench/out/quality-samples.jsonl',
  fits: { noul: { method: 'platt', a: 1.2, b: -0.5 } },
  reports: [
    { kind: 'noul', before: m(100, 0.08), after: m(100, 0.01), fit: { method: 'platt', a: 1.2, b: -0.5 }, refused: null },
    { kind: 'score', before: m(50, -0.03), after: m(50, -0.02), fit: null, refused: 'no method improved held-out RPS' },
  ],
};

const fitted: CalibrationRecord = {
  ...preset,
  version: 'L9.abcdef01.3',
  source: 'traces joined with retained requests in postgres://arbitra@db.internal:5432/arbitra',
  created_at: '2026-11-20T10:00:00.000Z',
  fits: { choice: { method: 'temperature', temperature: 1.7 } },
  reports: [{ kind: 'choice', before: m(80, 0.2), after: m(80, -0.01), fit: { method: 'temperature', temperature: 1.7 }, refused: null }],
};

const figure = (x: Metrics, calibrated: boolean) => ({ n: x.n, overconfidence: x.overconfidence, ece: x.ece, accuracy: x.accuracy, calibrated });

t.test('preset: a fitted type is served through its map, any other as read', async (t) => {
  t.same(servedQuality('preset', { preset, fitted: null }), {
    layout: 'L9',
    version: 'L9.abcdef01.preset',
    source: 'file bench/out/quality-samples.jsonl',
    calibration: 'preset',
    types: { noul: figure(m(100, 0.01), true), score: figure(m(50, -0.03), false) },
  });
});

t.test('off: every type as read, from the preset', async (t) => {
  t.same(servedQuality('off', { preset, fitted: null }), {
    layout: 'L9',
    version: 'L9.abcdef01.preset',
    source: 'file bench/out/quality-samples.jsonl',
    calibration: 'off',
    types: { noul: figure(m(100, 0.08), false), score: figure(m(50, -0.03), false) },
  });
});

t.test("fitted: the newest fit's figures, its source told without a path or a host", async (t) => {
  const q = servedQuality('fitted', { preset, fitted });
  t.same(q, {
    layout: 'L9',
    version: 'L9.abcdef01.3',
    source: 'traces joined with retained requests, fitted 2026-11-20T10:00:00.000Z',
    calibration: 'fitted',
    types: { choice: figure(m(80, -0.01), true) },
  });
  t.notMatch(JSON.stringify(q), /db\.internal|postgres/);
  const fromFile = servedQuality('fitted', { preset: null, fitted: { ...fitted, source: 'file /home/ops/outcomes.jsonl' } });
  t.match(fromFile, { source: 'a file of labelled outcomes, fitted 2026-11-20T10:00:00.000Z' });
  t.notMatch(JSON.stringify(fromFile), /home/);
});

t.test('fitted before any fit: served as read, so the preset measured it', async (t) => {
  t.match(servedQuality('fitted', { preset, fitted: null }), {
    calibration: 'fitted',
    version: 'L9.abcdef01.preset',
    types: { noul: figure(m(100, 0.08), false), score: figure(m(50, -0.03), false) },
  });
});

t.test('no record: the reason, and how to get one', async (t) => {
  t.same(servedQuality('off', { preset: null, fitted: null }), { unavailable: NO_PRESET });
  t.same(servedQuality('preset', { preset: null, fitted: null }), { unavailable: NO_PRESET });
  t.same(servedQuality('fitted', { preset: null, fitted: null }), { unavailable: NO_FIT });
  t.match(NO_PRESET, /fit one with `arbitra calibrate`/);
});

t.test('a type whose figures the record lacks is left out, not guessed', async (t) => {
  const old = { ...preset, reports: [{ ...preset.reports[0]!, after: { ...m(100, 0.01), overconfidence: undefined as unknown as number } }] };
  t.match(servedQuality('preset', { preset: old, fitted: null }), { calibration: 'preset', types: { noul: undefined } }, "the map's figures are missing");
  t.match(servedQuality('off', { preset: old, fitted: null }), { types: { noul: { calibrated: false } } });
});

t.test("the default model's shipped preset: every type, noul and choice calibrated under preset", async (t) => {
  const shipped = presetCalibration(DEFAULT_MODEL.sha256, LAYOUT_VERSION);
  const q = servedQuality('preset', { preset: shipped, fitted: null });
  t.match(q, {
    layout: LAYOUT_VERSION,
    calibration: 'preset',
    types: { noul: { calibrated: true }, choice: { calibrated: true }, score: { calibrated: false } },
  });
  if (q && 'types' in q)
    for (const [kind, f] of Object.entries(q.types)) t.ok(f.n > 0 && Math.abs(f.overconfidence) < 1, `${kind}: n ${f.n}, overconfidence ${f.overconfidence}`);
});
