// `arbitra calibrate`: fits a per-question-type calibration of one model from labelled outcomes,
// prints held-out figures before and after (each type's proper scoring rule, ECE, Brier), and
// stores it as a new version bound to the model's checksum and the prompt layout (or, with --out,
// writes it as a preset to ship), unless no question type improved.
//
// Outcomes come from the data dir (traces posted to /v1/traces joined with the requests retained
// with options.retain) or from a JSONL file, one decision per line:
//   {"answer": <an answer object as /v1/systemone returned it, uncalibrated>, "truth": true | "label" | 2}
//   {"type": "noul" | "choice" | "score", "p": [per option], "truth": <option index>}
import fs from 'node:fs';
import path from 'node:path';
import { parseFlags } from '../config.js';
import { describeFit, fitKind, ruleFor, type CalibrationRecord, type KindReport, type Sample } from '../decision/calibration.js';
import type { KindName } from '../decision/kinds/index.js';
import { LAYOUT_VERSION } from '../decision/prompt.js';
import { modelChecksum } from '../models/checksum.js';
import type { Store } from '../store/index.js';

export class CalibrateError extends Error {}

const KINDS: KindName[] = ['noul', 'choice', 'score'];

type Outcome = boolean | string | number;

/** The option index an outcome names, given the answer's option keys; null when it names none. */
export function outcomeIndex(kind: KindName, keys: string[], outcome: Outcome): number | null {
  if (kind === 'noul') {
    const v = typeof outcome === 'string' ? outcome.trim().toLowerCase() : outcome;
    if (v === true || v === 'true' || v === 'yes' || v === 1) return 0;
    if (v === false || v === 'false' || v === 'no' || v === 0) return 1;
    return null;
  }
  const i = keys.indexOf(String(outcome));
  return i >= 0 ? i : null;
}

/** An answer object as the API returns it → its kind, per-option probabilities and option keys. */
function fromAnswer(answer: Record<string, unknown>): { kind: KindName; p: number[]; keys: string[] } | null {
  if (answer.type === 'noul' && typeof answer.noul === 'number') return { kind: 'noul', p: [answer.noul, 1 - answer.noul], keys: ['yes', 'no'] };
  if ((answer.type === 'choice' || answer.type === 'score') && answer.probabilities && typeof answer.probabilities === 'object') {
    const probs = answer.probabilities as Record<string, number>;
    return { kind: answer.type, p: Object.values(probs), keys: Object.keys(probs) };
  }
  return null;
}

function validSample(s: { kind: unknown; p: unknown; truth: unknown }): s is Sample {
  return (
    KINDS.includes(s.kind as KindName) &&
    Array.isArray(s.p) &&
    s.p.length >= 2 &&
    s.p.every((x) => typeof x === 'number' && Number.isFinite(x) && x >= 0) &&
    Number.isInteger(s.truth) &&
    (s.truth as number) >= 0 &&
    (s.truth as number) < s.p.length
  );
}

/** Samples of a JSONL file; a line that is not a labelled decision is an error naming its number. */
export function samplesFromFile(file: string): Sample[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const out: Sample[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    const where = `${path.basename(file)} line ${i + 1}`;
    let row: Record<string, unknown>;
    try {
      row = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new CalibrateError(`${where} is not JSON`);
    }
    let sample: { kind: unknown; p: unknown; truth: unknown };
    if (row.answer && typeof row.answer === 'object') {
      const a = fromAnswer(row.answer as Record<string, unknown>);
      if (!a) throw new CalibrateError(`${where}: the answer is not a noul, choice or score answer`);
      sample = { kind: a.kind, p: a.p, truth: outcomeIndex(a.kind, a.keys, row.truth as Outcome) };
    } else {
      sample = { kind: row.type === 'yes_no' ? 'noul' : row.type, p: row.p, truth: row.truth };
    }
    if (!validSample(sample)) throw new CalibrateError(`${where}: needs {answer, truth} or {type, p, truth} with the truth among the options`);
    out.push(sample);
  });
  return out;
}

/**
 * Traces joined with retained decisions of this model and layout, in the order the decisions were
 * made; unmatched traces are skipped. The order is the folds' (cross-validation deals samples by
 * index): in the store's order, keyed by random request ids, the same traces gave different
 * held-out figures from run to run, and so a different choice of whether to save a fit.
 */
export async function samplesFromStore(store: Store, modelSha256: string): Promise<{ samples: Sample[]; skipped: number }> {
  const found: { sample: Sample; at: string; id: string; question: string }[] = [];
  let skipped = 0;
  for await (const trace of store.traces.all()) {
    const record = await store.retention.get(trace.key_id, trace.request_id);
    const decision = record?.decision;
    const answers = (record?.response as { answers?: Record<string, Record<string, unknown>> } | undefined)?.answers;
    const read = decision?.questions[trace.question];
    const answer = answers?.[trace.question];
    if (!decision || decision.model_sha256 !== modelSha256 || decision.layout !== LAYOUT_VERSION || !read || !answer) {
      skipped++;
      continue;
    }
    const keys = fromAnswer(answer)?.keys ?? [];
    const sample = { kind: read.kind, p: read.p, truth: outcomeIndex(read.kind as KindName, keys, trace.outcome) };
    if (validSample(sample)) found.push({ sample, at: record.created_at, id: trace.request_id, question: trace.question });
    else skipped++;
  }
  const order = (x: (typeof found)[number], y: (typeof found)[number]) =>
    x.at.localeCompare(y.at) || x.id.localeCompare(y.id) || x.question.localeCompare(y.question);
  return { samples: found.sort(order).map((f) => f.sample), skipped };
}

function fmt(x: number): string {
  return x.toFixed(4);
}

export function reportTable(reports: KindReport[]): string {
  const rows = [['TYPE', 'N', 'RULE', 'BEFORE', 'AFTER', 'ECE BEFORE', 'ECE AFTER', 'BRIER BEFORE', 'BRIER AFTER', 'FIT']];
  for (const r of reports) {
    const fit = r.fit ? describeFit(r.fit, 3) : `none: ${r.refused}`;
    rows.push([
      r.kind,
      String(r.before.n),
      ruleFor(r.kind).name,
      fmt(ruleFor(r.kind).of(r.before)),
      r.after ? fmt(ruleFor(r.kind).of(r.after)) : '-',
      fmt(r.before.ece),
      r.after ? fmt(r.after.ece) : '-',
      fmt(r.before.brier),
      r.after ? fmt(r.after.brier) : '-',
      fit,
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return (
    rows
      .map((row) =>
        row
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export interface CalibrateArgs {
  /** Where traced outcomes come from without a file, and where a fit is saved without a preset file. */
  store: Store | null;
  modelPath: string;
  file: string | null;
  /** Write the fit to this file as a preset to ship (calibrations/), not as a new version in the store. */
  presetFile: string | null;
  out: (text: string) => void;
}

/** A preset's version: the layout and model it is bound to, marked as shipped rather than fitted here. */
export function presetVersion(record: { model_sha256: string; layout: string }): string {
  return `${record.layout}.${record.model_sha256.slice(0, 8)}.preset`;
}

/** Fits, prints and (when any kind improved) saves; returns the saved record or null. */
export async function calibrate({ store, modelPath, file, presetFile, out }: CalibrateArgs): Promise<CalibrationRecord | null> {
  const sha = await modelChecksum(modelPath);
  let samples: Sample[];
  let source: string;
  if (file) {
    samples = samplesFromFile(file);
    // A shipped preset names its source as given (bench/out/...), not this machine's path to it.
    source = `file ${presetFile ? file : path.resolve(file)}`;
  } else {
    if (!store) throw new CalibrateError('traced outcomes need the store; pass --file for a labelled file');
    const found = await samplesFromStore(store, sha);
    samples = found.samples;
    source = `traces joined with retained requests in ${store.location}`;
    out(
      `${found.samples.length} traced outcomes of ${path.basename(modelPath)} under layout ${LAYOUT_VERSION} (${found.skipped} traces without a matching retained decision skipped)\n`,
    );
  }
  const reports = KINDS.map((kind) =>
    fitKind(
      kind,
      samples.filter((s) => s.kind === kind),
    ),
  ).filter((r) => r.before.n > 0);
  if (reports.length === 0) throw new CalibrateError(`no labelled outcomes found (${source})`);
  out(`held-out figures (5-fold cross-validation) for ${path.basename(modelPath)}, layout ${LAYOUT_VERSION}:\n`);
  out(reportTable(reports));
  const fits = Object.fromEntries(reports.filter((r) => r.fit).map((r) => [r.kind, r.fit!]));
  if (Object.keys(fits).length === 0) return null;
  const fitted = { model_sha256: sha, layout: LAYOUT_VERSION, created_at: new Date().toISOString(), source, fits, reports };
  if (presetFile) {
    const record: CalibrationRecord = { ...fitted, version: presetVersion(fitted) };
    fs.writeFileSync(presetFile, JSON.stringify(record, null, 1) + '\n');
    out(`wrote preset ${record.version} (${Object.keys(fits).join(', ')}) to ${presetFile}; served with --calibration preset from calibrations/\n`);
    return record;
  }
  if (!store) throw new CalibrateError('no store to save the calibration in');
  const record = await store.calibrations.add<CalibrationRecord>(fitted);
  out(`saved calibration ${record.version} (${Object.keys(fits).join(', ')}); served with --calibration fitted\n`);
  return record;
}

export const CALIBRATE_FLAGS = ['--model', '--file', '--out', '--data-dir', '--store'] as const;

export function calibrateFlags(argv: string[]): Record<string, string> {
  return parseFlags(argv, CALIBRATE_FLAGS);
}
