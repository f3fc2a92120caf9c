// `npm run bench:calibration-transfer -- --fit A.jsonl[,B.jsonl] --judge C.jsonl[,D.jsonl]`: does
// a calibration fitted on one labelled set help on another? Each type is fitted on the --fit files
// as `arbitra calibrate` fits it (the map chosen held out within them), then judged on the --judge
// files, which it never saw: before and after, by the type's proper scoring rule, Brier, ECE,
// overconfidence and accuracy. A preset is served only where it helps on data it was not fitted on.
// `--fit calibrations/X.json` judges a shipped preset's own maps instead of fitting.
// The files are what bench:quality writes (bench/out/quality-samples*.jsonl). Prints a table; the
// figures go into bench/RESULTS.md by hand with the command that made them.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { samplesFromFile } from '../src/cli/calibrate.js';
import { applyFit, describeFit, fitKind, ruleFor, type CalibrationRecord, type KindFit, type Sample } from '../src/decision/calibration.js';
import type { KindName } from '../src/decision/kinds/index.js';
import { metrics } from '../src/decision/scoring-rules.js';
import { fixed, pct, signed } from './lib/stats.js';

const { values } = parseArgs({ options: { fit: { type: 'string' }, judge: { type: 'string' } }, strict: true });
if (!values.fit || !values.judge) {
  process.stderr.write('usage: npm run bench:calibration-transfer -- --fit A.jsonl[,B.jsonl] --judge C.jsonl[,D.jsonl]\n');
  process.exit(2);
}
const read = (list: string): Sample[] => list.split(',').flatMap((f) => samplesFromFile(f.trim()));
const preset = values.fit.endsWith('.json') ? (JSON.parse(fs.readFileSync(values.fit, 'utf8')) as CalibrationRecord) : null;
const fitOn = preset ? [] : read(values.fit);
const judgeOn = read(values.judge);

/** The map a type gets: the preset's own, or one fitted on the --fit samples. */
function mapFor(kind: KindName): { fit: KindFit | null; n: string; why: string } {
  if (preset) return { fit: preset.fits[kind] ?? null, n: `preset ${preset.version}`, why: 'no map in the preset' };
  const fitted = fitOn.filter((s) => s.kind === kind);
  const report = fitKind(kind, fitted);
  return { fit: report.fit, n: String(fitted.length), why: report.refused ?? '' };
}

const lines = [
  `Fitted on ${values.fit}, judged on ${values.judge}.`,
  '',
  '| type | n fitted | n judged | map | rule | before | after | Brier before / after | ECE before / after | overconfidence before / after | accuracy before / after |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
];
for (const kind of ['noul', 'choice', 'score'] as KindName[]) {
  const judged = judgeOn.filter((s) => s.kind === kind);
  if (judged.length === 0 || (!preset && !fitOn.some((s) => s.kind === kind))) continue;
  const { fit, n, why } = mapFor(kind);
  const before = metrics(judged);
  const after = fit ? metrics(judged.map((s) => ({ p: applyFit(fit, s.p) ?? s.p, truth: s.truth }))) : before;
  const rule = ruleFor(kind);
  lines.push(
    `| ${kind} | ${n} | ${judged.length} | ${fit ? describeFit(fit) : `none (${why})`} | ${rule.name} | ${fixed(rule.of(before))} | ${fixed(rule.of(after))} | ${fixed(before.brier)} / ${fixed(after.brier)} | ${fixed(before.ece)} / ${fixed(after.ece)} | ${signed(before.overconfidence)} / ${signed(after.overconfidence)} | ${pct(before.accuracy)} / ${pct(after.accuracy)} |`,
  );
}
process.stdout.write(lines.join('\n') + '\n');
