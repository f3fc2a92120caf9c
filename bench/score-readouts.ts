// `npm run bench:score-readouts`: how a score's level distribution is best read, judged by the
// ranked probability score (RPS), a proper scoring rule for ordered levels, with the mean absolute
// error of the served score Σ i·pᵢ (the reference's expectation) beside it; the share within half
// a level is information only (sharpening raises it while the probabilities stop meaning what they
// say). Every score question of bench/quality/cases.jsonl is decided by the real engine and
// decision layer under each readout of PromptLayout.scoreReadout (src/decision/prompt.ts), plain
// and with permute; then, from the same distributions, with a temperature fitted by RPS on the
// other four fifths of the questions (held out), and as the mean of two readouts' distributions.
// The served layout is the readout and temperature with the lowest held-out RPS.
// Writes bench/out/score-readouts.json and the "Score readouts" section of bench/RESULTS.md.
// With `-- --set DIR` (repeatable, or comma-separated; `--items N`, default 200) the score
// questions of a public set's sample take the place of cases.jsonl's, written suffixed
// -public-<set> and to a section of their own.
//
// BENCH_MODELS    a catalogue name, a pulled model's name or hf: reference, or a GGUF path (default: the default model)
// BENCH_RUNS      readout/method pairs, comma-separated (default: every readout plain, letters also
//                 with permute2); readouts letters, digits, ordinal; methods plain, permute2
// BENCH_LIMIT     only the first N score questions (quick checks; not written to RESULTS.md)
import os from 'node:os';
import path from 'node:path';
import { validateSystemOneRequest } from '../src/api/schemas/systemone-validate.js';
import { decide } from '../src/decision/decide.js';
import type { ScoreSpec } from '../src/decision/kinds/index.js';
import { expectation } from '../src/decision/kinds/score.js';
import { LAYOUT, LAYOUT_VERSION, type PromptLayout } from '../src/decision/prompt.js';
import { FITTERS, heldOut, type KindFit, type Sample } from '../src/decision/calibration.js';
import { argmax } from '../src/decision/readout.js';
import { metrics, type Metrics } from '../src/decision/scoring-rules.js';
import { createLocalEngine } from '../src/engine/local.js';
import { modelFor } from '../src/config.js';
import { DEFAULT_MODEL } from '../src/models/catalogue.js';
import { packageRoot } from '../src/paths.js';
import { loadCases, truthIndex, type LabelledCase } from './lib/cases.js';
import { setsFromArgs, type Loaded } from './lib/public-sets/load.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { fixed, mean, median, pct, signed } from './lib/stats.js';

type Readout = PromptLayout['scoreReadout'];
const root = packageRoot();
const threads = Number(process.env.BENCH_THREADS) || os.availableParallelism();
const limit = Number(process.env.BENCH_LIMIT) || Infinity;
const METHODS = { plain: { debias: 'off' }, permute2: { debias: 'permute', debias_passes: 2 } } as const;
type Method = keyof typeof METHODS;
const READOUTS: Readout[] = ['letters', 'digits', 'ordinal'];
const planned = (process.env.BENCH_RUNS ?? 'letters/plain,letters/permute2,digits/plain,ordinal/plain').split(',').map((run) => {
  const [readout, method] = run.split('/') as [Readout, Method];
  if (!READOUTS.includes(readout) || !(method in METHODS))
    throw new Error(`BENCH_RUNS: ${run} is not readout/method (readouts ${READOUTS.join(', ')}; methods ${Object.keys(METHODS).join(', ')})`);
  return { readout, method };
});
const log = (msg: string): void => void process.stdout.write(`[bench:score-readouts] ${msg}\n`);

interface Question {
  id: string;
  state: string;
  question: Record<string, unknown>;
  truth: number;
}

interface Run {
  readout: Readout;
  method: Method;
  /** Per question (same order as the questions), the distribution as the layout served it. */
  p: number[][];
  ms: number[];
  branches: number;
}

const hit = (p: number[], truth: number) => (Math.abs(expectation(p) - truth) <= 0.5 ? 1 : 0);
const absError = (p: number[], truth: number) => Math.abs(expectation(p) - truth);

function scoreQuestions(cases: LabelledCase[]): Question[] {
  return cases
    .flatMap((c) =>
      Object.entries(c.questions)
        .filter(([, q]) => q.type === 'score')
        .map(([name, q]) => {
          const spec = validateSystemOneRequest({ state: c.state, questions: { [name]: q } }).questions[0] as ScoreSpec;
          return { id: `${c.id}/${name}`, state: c.state, question: q, truth: truthIndex(spec, c.truth[name]!) };
        }),
    )
    .slice(0, limit);
}

async function runReadout(file: string, readout: Readout, method: Method, qs: Question[]): Promise<Run> {
  // A fresh engine per run, so every readout meets each state with a cold prefix cache.
  const engine = await createLocalEngine(file, { threads, contextSize: 1024, maxSequences: 32 });
  const layout: PromptLayout = { ...LAYOUT, scoreReadout: readout, scoreTemperature: 1 };
  const info = await engine.info();
  const run: Run = { readout, method, p: [], ms: [], branches: 0 };
  for (const q of qs) {
    const req = validateSystemOneRequest({ state: q.state, questions: { q: q.question }, options: METHODS[method] });
    const t0 = performance.now();
    const d = await decide(req, engine, info, { maxPromptTokens: 1 << 20, layout });
    run.ms.push(performance.now() - t0);
    run.branches += d.usage.output_tokens;
    run.p.push(d.uncalibrated.q!.p);
  }
  await engine.close();
  return run;
}

interface Judged {
  metrics: Metrics;
  /** Mean |Σ i·pᵢ − truth|, in levels. */
  mae: number;
  /** Share with |Σ i·pᵢ − truth| ≤ 0.5: information, not a criterion. */
  within: number;
}

interface Row {
  readout: string;
  method: Method;
  /** The distributions as read (T = 1). */
  asRead: Judged;
  /** Each question tempered by T fitted by RPS on the other four fifths. */
  tempered: Judged;
  /** T fitted by RPS on all the questions: what would be served. */
  temperature: number;
  mode: number;
  branches: number;
  ms: number;
}

function judge(ps: number[][], truths: number[]): Judged {
  return {
    metrics: metrics(ps.map((p, i) => ({ p, truth: truths[i]! }))),
    mae: mean(ps.map((p, i) => absError(p, truths[i]!))),
    within: mean(ps.map((p, i) => hit(p, truths[i]!))),
  };
}

function rowOf(name: string, method: Method, ps: number[][], truths: number[], branches: number, ms: number): Row {
  const samples = ps.map((p, i): Sample => ({ kind: 'score', p, truth: truths[i]! }));
  const fit = FITTERS.temperature(samples) as Extract<KindFit, { method: 'temperature' }>;
  const held = heldOut(samples, FITTERS.temperature);
  return {
    readout: name,
    method,
    asRead: judge(ps, truths),
    tempered: judge(
      held.map((h) => h.p),
      held.map((h) => h.truth),
    ),
    temperature: fit.temperature,
    mode: mean(ps.map((p, i) => (argmax(p) === truths[i] ? 1 : 0))),
    branches,
    ms,
  };
}

/** Measures the readouts on one set's score questions: the project's own (`set` null) or a public set's sample. */
async function measure(qs: Question[], set: Loaded | null): Promise<void> {
  const name = process.env.BENCH_MODELS ?? DEFAULT_MODEL.name;
  const file = modelFor(name).model; // a catalogue name, a pulled model's name or hf: reference, a path
  const truths = qs.map((q) => q.truth);
  log(`${set ? `${set.set.name}: ` : ''}${qs.length} score questions; runs ${planned.map((r) => `${r.readout}/${r.method}`).join(', ')}; ${threads} threads`);
  const started = new Date();
  const runs: Run[] = [];
  for (const { readout, method } of planned) {
    const t0 = performance.now();
    runs.push(await runReadout(file, readout, method, qs));
    log(`${readout} ${method}: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  const rows: Row[] = runs.map((r) => rowOf(r.readout, r.method, r.p, truths, r.branches / qs.length, median(r.ms)));
  // Pairs of readouts, their distributions averaged: a combination costs both readouts' branches.
  for (const method of Object.keys(METHODS) as Method[]) {
    const of = runs.filter((r) => r.method === method);
    for (let a = 0; a < of.length; a++) {
      for (let b = a + 1; b < of.length; b++) {
        const [x, y] = [of[a]!, of[b]!];
        const ps = x.p.map((p, i) => p.map((v, j) => (v + y.p[i]![j]!) / 2));
        const ms = median(x.ms.map((m, i) => m + y.ms[i]!));
        rows.push(rowOf(`${x.readout}+${y.readout}`, method, ps, truths, (x.branches + y.branches) / qs.length, ms));
      }
    }
  }
  const cells = (j: Judged) =>
    `${fixed(j.metrics.rps)} | ${fixed(j.mae)} | ${fixed(j.metrics.logLoss)} | ${fixed(j.metrics.ece)} | ${signed(j.metrics.overconfidence)} | ${pct(j.within)}`;
  const table = [
    '| readout | method | RPS | MAE of Σ i·pᵢ | log loss | ECE | overconfidence | within 0.5 | T fitted by RPS held out: RPS | MAE | log loss | ECE | overconfidence | within 0.5 | T fitted on all | mode right | branches / question | ms / question |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.readout} | ${r.method} | ${cells(r.asRead)} | ${cells(r.tempered)} | ${r.temperature.toFixed(2)} | ${pct(r.mode)} | ${r.branches.toFixed(1)} | ${r.ms.toFixed(0)} |`,
    ),
  ];
  for (const line of table) process.stdout.write(`${line}\n`);
  const best = rows
    .flatMap((r) => [
      { name: `${r.readout}/${r.method} as read`, rps: r.asRead.metrics.rps },
      { name: `${r.readout}/${r.method} T=${r.temperature.toFixed(2)}`, rps: r.tempered.metrics.rps },
    ])
    .sort((a, b) => a.rps - b.rps)[0]!;
  log(`lowest held-out RPS: ${best.name} (${best.rps.toFixed(4)})`);
  writeRawResult(`score-readouts${set ? `-public-${set.tag}` : ''}`, {
    date: started.toISOString(),
    model: name,
    layoutVersion: LAYOUT_VERSION,
    set: set && { name: set.set.name, file: set.file.name, split: set.file.split, sha256: set.sha256, items: set.total },
    questions: qs.map((q) => q.id),
    truths,
    runs,
    rows,
  });
  if (limit !== Infinity) {
    log('not written to RESULTS.md: only full runs are');
    return;
  }
  const how = `on ${os.cpus().length} cores (${threads} engine threads), model ${name}, layout ${LAYOUT_VERSION} but for the readout`;
  if (set) {
    replaceSection(
      path.join(root, 'bench', 'RESULTS.md'),
      `Score readouts on public data: ${set.set.title}, ${set.file.split} (\`npm run bench:score-readouts -- --set ${set.arg}\`)`,
      [
        `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC with \`npm run bench:score-readouts -- --set ${set.arg} --items ${set.cases.length}\` ${how}.`,
        `Set: ${set.set.title}, ${set.file.split} split (${set.set.citation}): ${set.file.name}, sha256 ${set.sha256}, from ${set.file.source}. The ${qs.length} score questions of ${set.cases.length} of its ${set.total} items, the first by sha256 of \`${set.set.name}:<place in the file>\` (bench/lib/public-sets/load.ts), each decided alone with a cold prefix cache.`,
        '',
        ...table,
        '',
        `Lowest held-out RPS: **${best.name}** (${best.rps.toFixed(4)}). The columns are those of the "Score readouts" section.`,
      ].join('\n'),
    );
    log('bench/RESULTS.md updated');
    return;
  }
  replaceSection(
    path.join(root, 'bench', 'RESULTS.md'),
    'Score readouts (`npm run bench:score-readouts`)',
    [
      `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC with \`npm run bench:score-readouts\` ${how}.`,
      `Set: the ${qs.length} score questions of bench/quality/cases.jsonl (2 to 10 levels), each decided alone with a cold prefix cache.`,
      '',
      ...table,
      '',
      `Lowest held-out RPS: **${best.name}** (${best.rps.toFixed(4)}).`,
      '',
      '- RPS: ranked probability score, Σₖ (Fₖ − Oₖ)² over the n − 1 thresholds of the cumulative distributions, divided by n − 1 (0 is perfect). MAE: mean |Σ i·pᵢ − truth| of the served score, in levels. log loss: mean −ln p(truth level). ECE and overconfidence: of the most probable level, 10 bins; overconfidence is mean top probability minus the share of modes that are right.',
      '- within 0.5: |Σ i·pᵢ − truth| ≤ 0.5, the hit rate layout L3 was chosen by; information only.',
      '- T fitted by RPS held out: the distribution raised to 1/T and renormalised, T fitted (minimum mean RPS, golden-section search over 0.05 to 20, src/decision/calibration.ts) on the other four fifths of the questions; "T fitted on all" is the value that would be served.',
      '- letters: the levels shown once as lettered options, the letter read. digits: the levels with their own digits, the digit read. ordinal: one yes/no branch per level above the lowest, "is the answer <level k> or higher?", P(level ≥ k) made non-increasing and differenced.',
      "- a+b: the two readouts' distributions averaged; its branches and ms are the sum of both.",
      '- ms / question: median wall time of one decision with a cold prefix cache.',
    ].join('\n'),
  );
  log('bench/RESULTS.md updated');
}

async function main(): Promise<void> {
  const sets = setsFromArgs(limit);
  if (sets.length === 0) return measure(scoreQuestions(loadCases(path.join(root, 'bench', 'quality', 'cases.jsonl'))), null);
  const empty = sets.find((set) => scoreQuestions(set.cases).length === 0);
  if (empty) {
    process.stderr.write(`${empty.arg} has no score questions: bench:score-readouts reads only those\n`);
    process.exit(2);
  }
  for (const set of sets) await measure(scoreQuestions(set.cases), set);
}

await main();
