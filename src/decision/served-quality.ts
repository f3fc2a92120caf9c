// What an operator is told of the served probabilities per question type: their held-out accuracy,
// calibration error and overconfidence, read off the calibration record that describes what is
// served. Which record and which of its figures depend on --calibration: with `preset` a type the
// preset fitted is served through its map (the report's `after`), any other as read (`before`);
// with `off` every type is served as read, which the shipped preset measured too; with `fitted` the
// newest fit of `arbitra calibrate` describes what is served, and until one exists the answers are
// as read, as in `off`.
import type { CalibrationMode, CalibrationRecord } from './calibration.js';
import type { Metrics } from './scoring-rules.js';
import type { QualityFigures, ServedQuality, TypeQuality } from './schema/quality.js';

const TYPES = ['noul', 'choice', 'score'] as const;

export const NO_PRESET = 'no labelled figures ship for this model file; fit one with `arbitra calibrate`';
export const NO_FIT =
  'no calibration has been fitted for this model file under the served layout and no labelled figures ship for it; fit one with `arbitra calibrate`';

/**
 * The record's source as anyone may read it (/health answers without a key): a shipped preset names
 * data in the package, a fit made here names a path or a database this machine's operator keeps.
 */
function publicSource(record: CalibrationRecord, shipped: boolean): string {
  if (shipped) return record.source;
  const data = record.source.startsWith('file ') ? 'a file of labelled outcomes' : 'traces joined with retained requests';
  return `${data}, fitted ${record.created_at}`;
}

/** A record fitted before the figures were all kept lacks some: that type is left out, not guessed. */
const complete = (m: Metrics | null): m is Metrics => !!m && [m.n, m.accuracy, m.ece, m.overconfidence].every((x) => Number.isFinite(x));

function figures(record: CalibrationRecord, mode: CalibrationMode, applied: boolean, shipped: boolean): QualityFigures {
  const types: QualityFigures['types'] = {};
  for (const kind of TYPES) {
    const report = record.reports.find((r) => r.kind === kind);
    if (!report) continue;
    const calibrated = applied && !!record.fits[kind];
    const m = calibrated ? report.after : report.before;
    if (!complete(m)) continue;
    types[kind] = { n: m.n, overconfidence: m.overconfidence, ece: m.ece, accuracy: m.accuracy, calibrated } satisfies TypeQuality;
  }
  return { layout: record.layout, version: record.version, source: publicSource(record, shipped), calibration: mode, types };
}

/**
 * The figures of what is served, from the served mode, the model's shipped preset and (under
 * `fitted`) its newest fit; `unavailable` says why none describe it.
 */
export function servedQuality(mode: CalibrationMode, records: { preset: CalibrationRecord | null; fitted: CalibrationRecord | null }): ServedQuality {
  if (mode === 'fitted' && records.fitted) return figures(records.fitted, mode, true, false);
  if (!records.preset) return { unavailable: mode === 'fitted' ? NO_FIT : NO_PRESET };
  return figures(records.preset, mode, mode === 'preset', true);
}
