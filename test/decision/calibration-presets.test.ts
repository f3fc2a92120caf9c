// The calibrations shipped in calibrations/: the default model has one for the layout served now
// (a layout change without a refit fails here), bound to its file's checksum, and every map it
// holds beat the probabilities as read on held-out folds under its type's proper scoring rule.
import t from 'tap';
import { calibrationNotice, presetCalibration } from '../../src/decision/calibration-presets.js';
import { calibrationFrom, ruleFor } from '../../src/decision/calibration.js';
import { LAYOUT_VERSION } from '../../src/decision/prompt.js';
import { DEFAULT_MODEL } from '../../src/models/catalogue.js';

t.test('the default model has a preset for the served layout, and only it', async (t) => {
  const preset = presetCalibration(DEFAULT_MODEL.sha256, LAYOUT_VERSION);
  t.ok(preset, `a preset for ${DEFAULT_MODEL.name} under layout ${LAYOUT_VERSION}: refit it with arbitra calibrate --out`);
  t.equal(preset!.version, `${LAYOUT_VERSION}.${DEFAULT_MODEL.sha256.slice(0, 8)}.preset`);
  t.equal(presetCalibration(DEFAULT_MODEL.sha256, 'L0'), null, 'never applied under another layout');
  t.equal(presetCalibration('0'.repeat(64), LAYOUT_VERSION), null, 'never applied to another file');
});

t.test('every map in it improved its held-out rule without a worse Brier score', async (t) => {
  const preset = presetCalibration(DEFAULT_MODEL.sha256, LAYOUT_VERSION)!;
  const kinds = Object.keys(preset.fits);
  t.ok(kinds.length > 0, `maps for ${kinds.join(', ')}`);
  for (const report of preset.reports) {
    if (!preset.fits[report.kind]) {
      t.equal(report.fit, null, `${report.kind}: refused, so not served`);
      continue;
    }
    const rule = ruleFor(report.kind);
    t.ok(rule.of(report.after!) < rule.of(report.before), `${report.kind}: held-out ${rule.name} ${rule.of(report.before)} → ${rule.of(report.after!)}`);
    t.ok(report.after!.brier <= report.before.brier, `${report.kind}: Brier ${report.before.brier} → ${report.after!.brier}`);
  }
  t.match(calibrationFrom(preset).method, /^(platt|temperature)(\+temperature)?$/, 'served as the methods it names');
});

t.test('the start-up notice: nothing when off, the preset and its maps, or that none ships', async (t) => {
  t.equal(calibrationNotice('off', DEFAULT_MODEL.sha256, LAYOUT_VERSION), null);
  t.match(calibrationNotice('fitted', DEFAULT_MODEL.sha256, LAYOUT_VERSION), /newest fit of `arbitra calibrate`/);
  t.match(
    calibrationNotice('preset', DEFAULT_MODEL.sha256, LAYOUT_VERSION),
    new RegExp(`^calibration: preset ${LAYOUT_VERSION}\\.cc324af0\\.preset \\(noul platt, choice temperature; other types as read\\)$`),
  );
  t.match(
    calibrationNotice('preset', 'f'.repeat(64), LAYOUT_VERSION),
    /no preset ships for this model file \(sha256 ffffffffffff…\) under layout L\d+; answers are uncalibrated/,
  );
});
