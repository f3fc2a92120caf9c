// Calibrations shipped with the package (calibrations/*.json), served with `--calibration preset`.
// Each was fitted by `arbitra calibrate --out` on bench/quality's labelled set and is bound, as a
// fitted one is, to one model file's checksum and one prompt layout: a model or layout without a
// preset of its own is answered uncalibrated, never with another's map.
import fs from 'node:fs';
import path from 'node:path';
import type { CalibrationMode, CalibrationRecord } from './calibration.js';
import { packageRoot } from '../paths.js';

const PRESETS_DIR = 'calibrations';

let loaded: CalibrationRecord[] | undefined;

function presets(): CalibrationRecord[] {
  if (loaded) return loaded;
  const dir = path.join(packageRoot(), PRESETS_DIR);
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.json')) : [];
  return (loaded = files.sort().map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as CalibrationRecord));
}

/** The shipped calibration of this model file under this layout, or null. */
export function presetCalibration(modelSha256: string, layout: string): CalibrationRecord | null {
  return presets().find((p) => p.model_sha256 === modelSha256 && p.layout === layout) ?? null;
}

/**
 * What the operator is told at start-up about the calibration answers will carry, so that a preset
 * missing for the served model is said once, not found later in every answer's meta.
 */
export function calibrationNotice(mode: CalibrationMode, modelSha256: string, layout: string): string | null {
  if (mode === 'off') return null;
  if (mode === 'fitted') return `calibration: the newest fit of \`arbitra calibrate\` for this model under layout ${layout}, read per request`;
  const preset = presetCalibration(modelSha256, layout);
  if (!preset) {
    return `calibration: no preset ships for this model file (sha256 ${modelSha256.slice(0, 12)}…) under layout ${layout}; answers are uncalibrated (meta.calibration "none"); fit one with \`arbitra calibrate\``;
  }
  const maps = Object.entries(preset.fits).map(([kind, fit]) => `${kind} ${fit.method}`);
  return `calibration: preset ${preset.version} (${maps.join(', ')}; other types as read)`;
}
