// Calibrations shipped with the package (calibrations/*.json), served with `--calibration preset`.
// Each was fitted by `arbitra calibrate --out` on bench/quality's labelled set and is bound, as a
// fitted one is, to one model file's checksum and one prompt layout: a model or layout without a
// preset of its own is answered uncalibrated, never with another's map.
import fs from 'node:fs';
import path from 'node:path';
import type { CalibrationRecord } from './calibration.js';
import { packageRoot } from '../paths.js';

export const PRESETS_DIR = 'calibrations';

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
