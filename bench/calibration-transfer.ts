// `npm run bench:calibration-transfer -- --fit A.jsonl[,B.jsonl] --judge C.jsonl[,D.jsonl]`: does
// a calibration fitted on one labelled set help on another? Each type is fitted on the --fit files
// as `arbitra calibrate` fits it (the map chosen held out within them), then judged on the --judge
// files, which it never saw: before and after, by the type's proper scoring rule, Brier, ECE,
// overconfidence and accuracy. A preset is served only where it helps on data it was not fitted on.
// The files are what bench:quality writes (bench/out/quality-samples*.jsonl). Prints a table; the
// figures go into bench/RESULTS.md by hand with the command that made them.
import { parseArgs } from 'node:util';
import { samplesFromFile } from '../src/cli/calibrate.js';
import { applyFit, describeFit, fitKind, ruleFor, type Sample } from '../src/decision/calibration.js';
import type { KindName } from '../src/decision/kinds/index.js';
import { metrics } from '../src/decision/scoring-rules.js';
import { fixed, pct, signed } from './lib/stats.js';

const { values } = parseArgs({ options: { fit: { type: 'string' }, judge: { type: 'string' } }, strict: true });
if (!values.fit || !values.judge) {
  process.stderr.write('usage: npm run bench:calibration-transfer -- --fit A.jsonl[,B.jsonl] --judge C.jsonl[,D.jsonl]\n');
  process.exit(2);
}
const read = (list: string): Sample[] => list.split(',').flatMap((f) => samplesFromFile(f.trim()));
const fitOn = read(values.fit);
const judgeOn = read(values.judge);

const lines = [
  `Fitted on ${values.fit}, judged on ${values.judge}.`,
  '',
  '| type | n fitted | n judged | map | rule | before | after | Brier before / after | ECE before / after | overconfidence before / after | accuracy before / after |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
];
for (const kind of ['noul', 'choice', 'score'] as KindName[]) {
  const fitted = fitOn.filter((s) => s.kind === kind);
  const judged = judgeOn.filter((s) => s.kind === kind);
  if (fitted.length === 0 || judged.length === 0) continue;
  const report = fitKind(kind, fitted);
  const before = metrics(judged);
  const after = report.fit ? metrics(judged.map((s) => ({ p: applyFit(report.fit!, s.p) ?? s.p, truth: s.truth }))) : before;
  const rule = ruleFor(kind);
  lines.push(
    `| ${kind} | ${fitted.length} | ${judged.length} | ${report.fit ? describeFit(report.fit) : `none (${report.refused})`} | ${rule.name} | ${fixed(rule.of(before))} | ${fixed(rule.of(after))} | ${fixed(before.brier)} / ${fixed(after.brier)} | ${fixed(before.ece)} / ${fixed(after.ece)} | ${signed(before.overconfidence)} / ${signed(after.overconfidence)} | ${pct(before.accuracy)} / ${pct(after.accuracy)} |`,
  );
}
process.stdout.write(lines.join('\n') + '\n');
