// `npm run bench:score-readouts`: how a score's level distribution is best read, judged as a client
// reads the answer: |score − truth| ≤ 0.5 with score = Σ i·pᵢ, the reference's expectation. Every
// score question of bench/quality/cases.jsonl is decided by the real engine and decision layer
// under each readout of PromptLayout.scoreReadout (src/decision/prompt.ts), plain and with permute;
// then, from the same distributions, with a sharpening temperature fitted on the other four fifths
// of the questions (held out), and as the mean of two readouts' distributions.
// Writes bench/out/score-readouts.json and the "Score readouts" section of bench/RESULTS.md.
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
import { argmax, tempered } from '../src/decision/readout.js';
import { createLocalEngine } from '../src/engine/local.js';
import { modelFor } from '../src/config.js';
import { DEFAULT_MODEL } from '../src/models/catalogue.js';
import { packageRoot } from '../src/paths.js';
import { loadCases, truthIndex } from './lib/cases.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { mean, median } from './lib/stats.js';

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

/** Sharpening temperatures tried by the fit: 0.1 to 2, evenly in log T. */
const TEMPERATURES = Array.from({ length: 40 }, (_, i) => Math.exp(Math.log(0.1) + (i / 39) * (Math.log(2) - Math.log(0.1))));
const FOLDS = 5;

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

function scoreQuestions(): Question[] {
  const cases = loadCases(path.join(root, 'bench', 'quality', 'cases.jsonl'));
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

/** The temperature that minimises the mean |Σ i·pᵢ − truth| over `qs`. */
function fitTemperature(ps: number[][], truths: number[]): number {
  let best = { t: 1, err: Infinity };
  for (const t of TEMPERATURES) {
    const err = mean(ps.map((p, i) => absError(tempered(p, t), truths[i]!)));
    if (err < best.err) best = { t, err };
  }
  return best.t;
}

/** Hits with a temperature fitted on the other folds (question i is in fold i mod FOLDS). */
function heldOutTempered(ps: number[][], truths: number[]): number[] {
  return ps.map((p, i) => {
    const train = ps.map((_, j) => j).filter((j) => j % FOLDS !== i % FOLDS);
    const t = fitTemperature(
      train.map((j) => ps[j]!),
      train.map((j) => truths[j]!),
    );
    return hit(tempered(p, t), truths[i]!);
  });
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

interface Row {
  readout: string;
  method: Method;
  expectation: number;
  mode: number;
  tempered: number;
  temperature: number;
  mae: number;
  branches: number;
  ms: number;
}

function rowOf(name: string, method: Method, ps: number[][], truths: number[], branches: number, ms: number): Row {
  const t = fitTemperature(ps, truths);
  return {
    readout: name,
    method,
    expectation: mean(ps.map((p, i) => hit(p, truths[i]!))),
    mode: mean(ps.map((p, i) => (argmax(p) === truths[i] ? 1 : 0))),
    tempered: mean(heldOutTempered(ps, truths)),
    temperature: t,
    mae: mean(ps.map((p, i) => absError(p, truths[i]!))),
    branches,
    ms,
  };
}

async function main(): Promise<void> {
  const name = process.env.BENCH_MODELS ?? DEFAULT_MODEL.name;
  const file = modelFor(name).model; // a catalogue name, a pulled model's name or hf: reference, a path
  const qs = scoreQuestions();
  const truths = qs.map((q) => q.truth);
  log(`${qs.length} score questions; runs ${planned.map((r) => `${r.readout}/${r.method}`).join(', ')}; ${threads} threads`);
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
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const table = [
    '| readout | method | within 0.5 by Σ i·pᵢ | same, temperature fitted held out | temperature fitted on all | mode right | mean abs error of Σ i·pᵢ | branches / question | ms / question |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.readout} | ${r.method} | ${pct(r.expectation)} | ${pct(r.tempered)} | ${r.temperature.toFixed(2)} | ${pct(r.mode)} | ${r.mae.toFixed(3)} | ${r.branches.toFixed(1)} | ${r.ms.toFixed(0)} |`,
    ),
  ];
  for (const line of table) process.stdout.write(`${line}\n`);
  writeRawResult('score-readouts', {
    date: started.toISOString(),
    model: name,
    layoutVersion: LAYOUT_VERSION,
    questions: qs.map((q) => q.id),
    truths,
    runs,
    rows,
  });
  if (limit !== Infinity) {
    log('not written to RESULTS.md: only full runs are');
    return;
  }
  replaceSection(
    path.join(root, 'bench', 'RESULTS.md'),
    'Score readouts (`npm run bench:score-readouts`)',
    [
      `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC with \`npm run bench:score-readouts\` on ${os.cpus().length} cores (${threads} engine threads), model ${name}, layout ${LAYOUT_VERSION} but for the readout.`,
      `Set: the ${qs.length} score questions of bench/quality/cases.jsonl (2 to 10 levels), each decided alone with a cold prefix cache.`,
      '',
      ...table,
      '',
      '- within 0.5 by Σ i·pᵢ: the answer as a client reads it, score = the expectation, |score − truth| ≤ 0.5.',
      `- temperature fitted held out: the distribution raised to 1/T and renormalised, T fitted (minimum mean |Σ i·pᵢ − truth| over ${TEMPERATURES.length} values from 0.1 to 2) on the other four fifths of the questions; the next column is T fitted on all of them, what would be served.`,
      '- letters: the levels shown once as lettered options, the letter read. digits: the levels with their own digits, the digit read. ordinal: one yes/no branch per level above the lowest, "is the answer <level k> or higher?", P(level ≥ k) made non-increasing and differenced.',
      "- a+b: the two readouts' distributions averaged; its branches and ms are the sum of both.",
      '- ms / question: median wall time of one decision with a cold prefix cache.',
    ].join('\n'),
  );
  log('bench/RESULTS.md updated');
}

await main();
