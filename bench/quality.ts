// `npm run bench:quality`: how right the probabilities are. Every case of bench/quality/cases.jsonl
// (a labelled set written for this project) is decided by the real engine and decision layer, per
// model and per debias method, and scored against its truth by proper scoring rules (log loss,
// Brier, and the ranked probability score for scores) and by calibration (expected calibration
// error in 10 bins, overconfidence), as served and through a calibration fitted on the other four
// fifths (what `arbitra calibrate` fits; the shipped preset); with the served score's mean absolute
// error, accuracy as a client reads it, order flips when choice options are listed in reverse, the
// label mass, and milliseconds per decision.
// Writes bench/out/quality.json, bench/out/quality-samples*.jsonl (one per model and method, input
// for `arbitra calibrate --file`), the reliability diagram bench/out/quality-reliability.svg and the quality section of
// bench/RESULTS.md.
// With `-- --set DIR` (repeatable, or comma-separated) a public set's sample takes the place of
// cases.jsonl (`--items N`, default 200; bench/lib/public-sets says which sets and files): each set
// writes the same files suffixed -public-<set> and its own section of bench/RESULTS.md.
//
// BENCH_MODELS   catalogue names, pulled models' names or hf: references, or GGUF paths, comma-separated (default: the default model)
// BENCH_METHODS  plain, permute2, permute4, prior (default: all four)
// BENCH_LAYOUT   served (default), no-system, l3-sharpened, digits, ordinal: a layout to measure against the served one
// BENCH_LIMIT    decide only the first N cases (quick checks)
// BENCH_TYPES    only these question types, e.g. score or noul,choice (quick checks)
// BENCH_CPU_VARIANT  the CPU backend's variant to load, as --cpu-variant takes it (default auto): the
//                quality of one variant against another's
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Answer } from '../src/api/schemas/systemone.js';
import { validateSystemOneRequest } from '../src/api/schemas/systemone-validate.js';
import { describeFit, FITTERS, fitKind, heldOut, type KindReport, type Sample } from '../src/decision/calibration.js';
import { metrics, reliability, type Forecast, type Metrics, type ReliabilityBin } from '../src/decision/scoring-rules.js';
import { decide } from '../src/decision/decide.js';
import type { KindName } from '../src/decision/kinds/index.js';
import { LAYOUT, LAYOUT_VERSION, type PromptLayout } from '../src/decision/prompt.js';
import { argmax } from '../src/decision/readout.js';
import { expectation } from '../src/decision/kinds/score.js';
import { createLocalEngine, type LocalEngine } from '../src/engine/local.js';
import { modelIdOf } from '../src/api/routes/models.js';
import { modelFor } from '../src/config.js';
import { CATALOGUE, DEFAULT_MODEL } from '../src/models/catalogue.js';
import { packageRoot } from '../src/paths.js';
import { loadCases, reversedChoices, truthIndex, type LabelledCase } from './lib/cases.js';
import { setsFromArgs, type Loaded } from './lib/public-sets/load.js';
import { reliabilitySvg, type Panel } from './lib/reliability-svg.js';
import { replaceSection } from './lib/results.js';
import { eceFloor } from './lib/ece-floor.js';
import { fixed, mean, median, pct, signed } from './lib/stats.js';
import { pathReport } from '../src/engine/exact-path.js';

const root = packageRoot();
const threads = Number(process.env.BENCH_THREADS) || os.availableParallelism();
const limit = Number(process.env.BENCH_LIMIT) || Infinity;
const types = process.env.BENCH_TYPES?.split(',') ?? null;
const cpuVariant = process.env.BENCH_CPU_VARIANT ?? 'auto';
/** The variant the engines loaded, for the report. */
let loadedVariant = cpuVariant;
const log = (msg: string): void => void process.stdout.write(`[bench:quality] ${msg}\n`);

const LAYOUTS: Record<string, PromptLayout> = {
  served: LAYOUT,
  'no-system': { ...LAYOUT, system: null },
  // Layout L3's score sharpening, chosen by a hit rate (bench/RESULTS.md says what it cost).
  'l3-sharpened': { ...LAYOUT, scoreTemperature: 0.13 },
  digits: { ...LAYOUT, scoreReadout: 'digits', scoreTemperature: 1 },
  ordinal: { ...LAYOUT, scoreReadout: 'ordinal', scoreTemperature: 1 },
};
const layoutName = process.env.BENCH_LAYOUT ?? 'served';
const layout = LAYOUTS[layoutName];
if (!layout) throw new Error(`BENCH_LAYOUT must be one of ${Object.keys(LAYOUTS).join(', ')}`);

/** A debias method: the request options it sends, or the plain run corrected by a content-free prior. */
const METHODS = {
  plain: { options: { debias: 'off' } },
  permute2: { options: { debias: 'permute', debias_passes: 2 } },
  permute4: { options: { debias: 'permute', debias_passes: 4 } },
  prior: { options: { debias: 'off' } },
} as const;
type Method = keyof typeof METHODS;
/** A derived method: choice questions averaged over the plain run and the run with options reversed. */
const ORIG_REV = 'orig+rev';
type Reported = Method | typeof ORIG_REV;
const methods = (process.env.BENCH_METHODS ?? 'plain,permute2,permute4,prior').split(',') as Method[];
for (const m of methods) if (!(m in METHODS)) throw new Error(`unknown method ${m}; use ${Object.keys(METHODS).join(', ')}`);

/** The state a content-free prior is read with: the same questions about nothing. */
const CONTENT_FREE = 'N/A';

function modelPaths(): { name: string; file: string }[] {
  const names = (process.env.BENCH_MODELS ?? DEFAULT_MODEL.name)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return names.map((n) => {
    // The same resolution as --model: a catalogue name, a pulled model's name or hf: reference, a path.
    const { model: file, modelEntry } = modelFor(n);
    if (!fs.existsSync(file)) throw new Error(`${file} is missing: run \`arbitra models pull ${modelEntry?.name ?? n}\` first`);
    return { name: modelEntry?.name ?? modelIdOf(file), file };
  });
}

interface Record_ {
  model: string;
  method: Reported;
  case: string;
  domain: string;
  question: string;
  kind: KindName;
  /** Per option, as the method read it. */
  p: number[];
  truth: number;
  /** For score questions, the score as a client reads it: the served expectation Σ i·pᵢ (of p as the method read it). */
  score: number | null;
  labelMass: number;
  /** For choice questions: whether the choice changed with the options listed in reverse. */
  flipped: boolean | null;
  answer: Answer;
  rawTruth: boolean | string | number;
}

/** Per option, from an answer: noul [yes, no]; choice and score in the order of their keys. */
function distribution(answer: Answer): number[] {
  if (answer.type === 'noul') return [answer.noul, 1 - answer.noul];
  if (answer.type === 'choice' || answer.type === 'score') return Object.values(answer.probabilities);
  throw new Error(`no distribution in a ${answer.type} answer`);
}

function labelMassOf(answer: Answer): number {
  return 'label_mass' in answer && typeof answer.label_mass === 'number' ? answer.label_mass : NaN;
}

async function decideCase(engine: LocalEngine, c: LabelledCase, options: object) {
  const req = validateSystemOneRequest({ state: c.state, questions: c.questions, options });
  const t0 = performance.now();
  const d = await decide(req, engine, await engine.info(), { maxPromptTokens: 1 << 20, layout });
  return { req, answers: d.answers, ms: performance.now() - t0 };
}

function choiceOf(answer: Answer): string | null {
  return answer.type === 'choice' ? answer.choice : null;
}

async function runModel(model: { name: string; file: string }, cases: LabelledCase[]) {
  // One engine per timed method, so every method meets each state with a cold prefix cache.
  const engines = new Map<Method, LocalEngine>();
  for (const m of methods) {
    const timedAs: Method = m === 'prior' ? 'plain' : m;
    if (engines.has(timedAs)) continue;
    const engine = await createLocalEngine(model.file, { threads, contextSize: 1024, maxSequences: 32, cpuVariant });
    const { kernelPath } = await engine.info();
    pathReport(kernelPath).forEach((line) => log(line));
    loadedVariant = kernelPath.cpuVariant;
    engines.set(timedAs, engine);
  }
  const records: Record_[] = [];
  const ms: Record<string, number[]> = {};
  const priors = new Map<string, number[]>();
  const priorsRead = new Set<string>();
  const t0 = performance.now();
  for (const [i, c] of cases.entries()) {
    const runs = new Map<Method, { run: Awaited<ReturnType<typeof decideCase>>; reversed: Awaited<ReturnType<typeof decideCase>> }>();
    for (const method of methods) {
      const engine = engines.get(method === 'prior' ? 'plain' : method)!;
      // The prior corrects the plain run: the same answers when plain was run too.
      const reuse = method === 'prior' ? runs.get('plain') : undefined;
      const run = reuse?.run ?? (await decideCase(engine, c, METHODS[method].options));
      const hasChoice = Object.values(c.questions).some((q) => q.type === 'choice');
      const reversed = reuse?.reversed ?? (hasChoice ? await decideCase(engine, reversedChoices(c), METHODS[method].options) : run);
      runs.set(method, { run, reversed });
      let extraMs = 0;
      if (method === 'prior') {
        const key = JSON.stringify(c.questions);
        // Read once per distinct question set, as a server would cache it: the state plays no part.
        if (!priorsRead.has(key)) {
          priorsRead.add(key);
          const cf = await decideCase(engine, { ...c, state: CONTENT_FREE }, METHODS.plain.options);
          extraMs = cf.ms;
          for (const spec of cf.req.questions) priors.set(`${key}\u0000${spec.name}`, distribution(cf.answers[spec.name]!));
        }
      }
      (ms[method] ??= []).push(run.ms + extraMs);
      if (method === 'plain') (ms[ORIG_REV] ??= []).push(run.ms + reversed.ms);
      for (const spec of run.req.questions) {
        const answer = run.answers[spec.name]!;
        let p = distribution(answer);
        if (method === 'prior') {
          const prior = priors.get(`${JSON.stringify(c.questions)}\u0000${spec.name}`)!;
          const corrected = p.map((x, j) => x / Math.max(prior[j]!, 1e-9));
          const sum = corrected.reduce((a, b) => a + b, 0);
          p = corrected.map((x) => x / sum);
        }
        const other = reversed.answers[spec.name]!;
        records.push({
          model: model.name,
          method,
          case: c.id,
          domain: c.domain,
          question: spec.name,
          kind: spec.kind,
          p,
          truth: truthIndex(spec, c.truth[spec.name]!),
          score: spec.kind === 'score' ? expectation(p) : null,
          labelMass: labelMassOf(answer),
          flipped: spec.kind === 'choice' && method !== 'prior' ? choiceOf(answer) !== choiceOf(other) : null,
          answer,
          rawTruth: c.truth[spec.name]!,
        });
        if (method === 'plain' && answer.type === 'choice' && other.type === 'choice') {
          const averaged = spec.kind === 'choice' ? spec.options.map((o, j) => (p[j]! + other.probabilities[o.label]!) / 2) : p;
          records.push({ ...records.at(-1)!, method: ORIG_REV, p: averaged, flipped: false });
        }
      }
    }
    if ((i + 1) % 10 === 0 || i + 1 === cases.length) {
      const elapsed = (performance.now() - t0) / 1000;
      log(`${model.name}: ${i + 1}/${cases.length} cases, ${elapsed.toFixed(0)} s, about ${((elapsed / (i + 1)) * (cases.length - i - 1)).toFixed(0)} s left`);
    }
  }
  for (const e of engines.values()) await e.close();
  return { records, ms };
}

/** The score a readout reports from a level distribution. */
const READOUTS = {
  expectation,
  mode: argmax,
  median: (p: number[]) => {
    let acc = 0;
    for (let i = 0; i < p.length; i++) if ((acc += p[i]!) >= 0.5) return i;
    return p.length - 1;
  },
};

/** Right as a client reads the answer: noul P(yes) > 0.5, the choice given, |score − truth| ≤ 0.5. */
function correct(r: Record_): boolean {
  if (r.kind === 'score') return Math.abs(r.score! - r.truth) <= 0.5;
  return argmax(r.p) === r.truth;
}

interface Row {
  model: string;
  method: Reported;
  kind: KindName | 'all';
  n: number;
  accuracy: number;
  /** The most probable option is the truth (for score: the mode, which clients are not served). */
  argmaxAccuracy: number;
  served: Metrics;
  /** The ECE a perfectly calibrated forecaster would show on these forecasts (sampling noise). */
  eceFloor: number;
  /** Scores: mean |Σ i·pᵢ − truth| of the served score, in levels. */
  mae: number | null;
  /** Each question read through a calibration fitted on the other four fifths (null for "all"). */
  calibrated: Metrics | null;
  /** The reliability bins of the forecasts as served and as calibrated held out (null for "all"). */
  bins: { served: ReliabilityBin[]; calibrated: ReliabilityBin[] } | null;
  calibration: string;
  flips: number | null;
  labelMass: number;
  msPerDecision: number | null;
}

function mapName(report: KindReport): string {
  if (!report.fit) return `none (${report.refused})`;
  return describeFit(report.fit);
}

/** A kind's forecasts as served and as a calibration fitted without each of them reads them. */
function calibratedForecasts(kind: KindName, rs: Record_[]): { report: KindReport; forecasts: Forecast[] } {
  const samples = rs.map((r): Sample => ({ kind, p: r.p, truth: r.truth }));
  const report = fitKind(kind, samples);
  return { report, forecasts: report.fit ? heldOut(samples, FITTERS[report.fit.method]) : samples };
}

function summarise(records: Record_[], ms: Record<string, number[]>): Row[] {
  const rows: Row[] = [];
  const groups = new Map<string, Record_[]>();
  for (const r of records) {
    for (const kind of [r.kind, 'all'] as const) {
      const key = `${r.model}\u0000${r.method}\u0000${kind}`;
      (groups.get(key) ?? groups.set(key, []).get(key)!).push(r);
    }
  }
  for (const [key, rs] of groups) {
    const [model, method, kind] = key.split('\u0000') as [string, Reported, KindName | 'all'];
    const fitted = kind === 'all' ? null : calibratedForecasts(kind, rs);
    const flips = rs.filter((r) => r.flipped !== null);
    rows.push({
      model,
      method,
      kind,
      n: rs.length,
      accuracy: mean(rs.map((r) => (correct(r) ? 1 : 0))),
      argmaxAccuracy: mean(rs.map((r) => (argmax(r.p) === r.truth ? 1 : 0))),
      served: metrics(rs),
      eceFloor: eceFloor(rs),
      mae: kind === 'score' ? mean(rs.map((r) => Math.abs(r.score! - r.truth))) : null,
      calibrated: fitted ? metrics(fitted.forecasts) : null,
      bins: fitted ? { served: reliability(rs), calibrated: reliability(fitted.forecasts) } : null,
      calibration: fitted ? mapName(fitted.report) : '',
      flips: flips.length > 0 ? mean(flips.map((r) => (r.flipped ? 1 : 0))) : null,
      labelMass: mean(rs.map((r) => r.labelMass)),
      msPerDecision: kind === 'all' ? median(ms[method] ?? []) : null,
    });
  }
  return rows;
}

/** The diagram of one model and method: per type, the served probabilities and the calibrated ones held out. */
function reliabilityPanels(rows: Row[]): Panel[] {
  return rows.flatMap((r) =>
    r.bins
      ? [
          {
            title: `${r.kind} (${r.n})`,
            series: [
              { name: 'as served', colour: '#c0392b', bins: r.bins.served },
              { name: 'calibrated, 5-fold held out', colour: '#2471a3', bins: r.bins.calibrated },
            ],
          },
        ]
      : [],
  );
}

/** Decides and reports one set: the project's own (`set` null) or a public set's sample. */
async function measure(source: LabelledCase[], set: Loaded | null): Promise<void> {
  const cases = source
    .map((c) =>
      types
        ? { ...c, questions: Object.fromEntries(Object.entries(c.questions).filter(([, q]) => types.includes(typeof q.type === 'string' ? q.type : 'noul'))) }
        : c,
    )
    .filter((c) => Object.keys(c.questions).length > 0)
    .slice(0, limit);
  const questions = cases.reduce((n, c) => n + Object.keys(c.questions).length, 0);
  log(
    `${set ? `${set.set.name}: ` : ''}${cases.length} cases, ${questions} questions; methods ${methods.join(', ')}; layout ${layoutName} (${LAYOUT_VERSION}); ${threads} threads`,
  );
  const started = new Date();
  const all: Record_[] = [];
  const timing: Record<string, Record<string, number[]>> = {};
  for (const model of modelPaths()) {
    const { records, ms } = await runModel(model, cases);
    all.push(...records);
    timing[model.name] = ms;
  }
  const rows = [...new Set(all.map((r) => r.model))].flatMap((m) =>
    summarise(
      all.filter((r) => r.model === m),
      timing[m]!,
    ),
  );
  const order = (r: Row) => `${r.model}\u0000${[...methods, ORIG_REV].indexOf(r.method)}\u0000${['all', 'noul', 'choice', 'score'].indexOf(r.kind)}`;
  rows.sort((a, b) => order(a).localeCompare(order(b)));

  const scoreReadouts = [...new Set(all.filter((r) => r.kind === 'score').map((r) => `${r.model}\u0000${r.method}`))].map((key) => {
    const [model, method] = key.split('\u0000');
    const rs = all.filter((r) => r.model === model && r.method === method && r.kind === 'score');
    const hits = (read: (p: number[]) => number) => mean(rs.map((r) => (Math.abs(read(r.p) - r.truth) <= 0.5 ? 1 : 0)));
    return { model, method, expectation: hits(READOUTS.expectation), mode: hits(READOUTS.mode), median: hits(READOUTS.median) };
  });

  const outDir = path.join(root, 'bench', 'out');
  fs.mkdirSync(outDir, { recursive: true });
  const suffix = `${set ? `-public-${set.tag}` : ''}${layoutName === 'served' ? '' : `-${layoutName}`}`;
  fs.writeFileSync(
    path.join(outDir, `quality${suffix}.json`),
    JSON.stringify(
      {
        date: started.toISOString(),
        layout: layoutName,
        layoutVersion: LAYOUT_VERSION,
        set: set && { name: set.set.name, file: set.file.name, split: set.file.split, sha256: set.sha256, items: set.total },
        methods,
        rows,
        scoreReadouts,
        records: all.map(({ answer: _a, ...r }) => r),
      },
      null,
      1,
    ) + '\n',
  );
  // What `arbitra calibrate --file` fits: one file per model and served method, one line per
  // question (the derived orig+rev and prior rows are not served, and would count questions twice).
  // The default model's plain run, what a request without options is served, is quality-samples.jsonl.
  const modelNames = [...new Set(all.map((r) => r.model))];
  for (const model of modelNames) {
    for (const method of methods.filter((m) => m !== 'prior')) {
      const name = [modelNames.length > 1 ? model : '', method === 'plain' ? '' : method].filter(Boolean).join('-');
      fs.writeFileSync(
        path.join(outDir, `quality-samples${suffix}${name ? `-${name}` : ''}.jsonl`),
        all
          .filter((r) => r.model === model && r.method === method)
          .map((r) => JSON.stringify({ model: r.model, method: r.method, case: r.case, question: r.question, answer: r.answer, truth: r.rawTruth }))
          .join('\n') + '\n',
      );
    }
  }
  const first = all[0];
  const diagram = path.join(outDir, `quality-reliability${suffix}.svg`);
  if (first) {
    const shown = rows.filter((r) => r.model === first.model && r.method === first.method);
    fs.writeFileSync(
      diagram,
      reliabilitySvg(
        reliabilityPanels(shown),
        `${first.model}, ${first.method}, layout ${LAYOUT_VERSION}${suffix ? ` (${layoutName})` : ''}: top answer's probability against its hit rate, 10 bins`,
      ),
    );
  }

  const table = [
    '| model | method | type | n | accuracy as served | argmax accuracy | log loss | Brier | RPS | MAE of Σ i·pᵢ | ECE | ECE if calibrated | overconfidence | calibrated held out: log loss / RPS | ECE | overconfidence | fitted map | order flips | label mass | ms / decision |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => {
      const rule = r.kind === 'score' ? r.calibrated?.rps : r.calibrated?.logLoss;
      return `| ${r.model} | ${r.method} | ${r.kind} | ${r.n} | ${pct(r.accuracy)} | ${pct(r.argmaxAccuracy)} | ${fixed(r.served.logLoss)} | ${fixed(r.served.brier)} | ${r.kind === 'score' ? fixed(r.served.rps) : '–'} | ${fixed(r.mae)} | ${fixed(r.served.ece)} | ${fixed(r.eceFloor)} | ${signed(r.served.overconfidence)} | ${fixed(rule ?? null)} | ${fixed(r.calibrated?.ece ?? null)} | ${signed(r.calibrated?.overconfidence ?? null)} | ${r.calibration || '–'} | ${pct(r.flips)} | ${fixed(r.labelMass)} | ${r.msPerDecision === null ? '–' : r.msPerDecision.toFixed(0)} |`;
    }),
  ];
  for (const line of table) process.stdout.write(`${line}\n`);
  const readoutTable = [
    '| model | method | expectation | mode | median |',
    '|---|---|---|---|---|',
    ...scoreReadouts.map((s) => `| ${s.model} | ${s.method} | ${pct(s.expectation)} | ${pct(s.mode)} | ${pct(s.median)} |`),
  ];
  for (const line of readoutTable) process.stdout.write(`${line}\n`);
  log(`reliability diagram: ${path.relative(root, diagram)}`);

  if (layoutName !== 'served' || limit !== Infinity || types) {
    log('not written to RESULTS.md: only full runs of the served layout are');
    return;
  }
  const modelsLine = [...new Set(all.map((r) => r.model))]
    .map((name) => {
      const e = CATALOGUE.find((c) => c.name === name);
      return e ? `${name} (${e.upstream})` : name;
    })
    .join('; ');
  const command = `BENCH_MODELS=${[...new Set(all.map((r) => r.model))].join(',')}${process.env.BENCH_METHODS ? ` BENCH_METHODS=${methods.join(',')}` : ''}${process.env.BENCH_CPU_VARIANT ? ` BENCH_CPU_VARIANT=${cpuVariant}` : ''} npm run bench:quality`;
  if (set) {
    replaceSection(
      path.join(root, 'bench', 'RESULTS.md'),
      `Quality on public data: ${set.set.title}, ${set.file.split} (\`npm run bench:quality -- --set ${set.arg}\`)`,
      [
        `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command} -- --set ${set.arg} --items ${cases.length}\` on ${os.cpus().length} cores (${threads} engine threads, CPU variant ${loadedVariant}), layout ${LAYOUT_VERSION}; methods ${methods.join(', ')}.`,
        `Set: ${set.set.title}, ${set.file.split} split (${set.set.citation}): ${set.file.name}, sha256 ${set.sha256}, from ${set.file.source}. ${cases.length} of its ${set.total} items, the first by sha256 of \`${set.set.name}:<place in the file>\` (bench/lib/public-sets/load.ts), one question each. Models: ${modelsLine}.`,
        '',
        ...table,
        '',
        `![Reliability diagram of ${first?.model ?? ''}, ${first?.method ?? ''}](out/quality-reliability${suffix}.svg)`,
        '',
        ...(scoreReadouts.length > 0
          ? ['Score readouts: share of score questions within 0.5 of the true level, by how the score is read.', '', ...readoutTable, '']
          : []),
        `The columns are those of the "Quality" section. Raw figures: bench/out/quality${suffix}.json; per-question answers: bench/out/quality-samples${suffix}*.jsonl.`,
      ].join('\n'),
    );
    log('bench/RESULTS.md updated');
    return;
  }
  replaceSection(
    path.join(root, 'bench', 'RESULTS.md'),
    'Quality (`npm run bench:quality`)',
    [
      `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` on ${os.cpus().length} cores (${threads} engine threads, CPU variant ${loadedVariant}), layout ${LAYOUT_VERSION}.`,
      `Set: bench/quality/cases.jsonl, ${cases.length} cases, ${questions} questions. Models: ${modelsLine}.`,
      '',
      ...table,
      '',
      `![Reliability diagram of ${first?.model ?? ''}, ${first?.method ?? ''}](out/quality-reliability.svg)`,
      '',
      'Score readouts: share of score questions within 0.5 of the true level, by how the score is read from the same distribution (information, not a criterion: sharpening raises it).',
      '',
      ...readoutTable,
      '',
      '- accuracy as served: the answer right as a client reads it (noul: P(yes) > 0.5; choice: the label given; score: |score − truth| ≤ 0.5 with the served score, the expectation Σ i·pᵢ). argmax accuracy: the most probable option is the truth (for score, the mode). Both are information; the criteria are the proper scoring rules.',
      '- log loss: mean −ln p(truth), nats. Brier: mean Σᵢ (pᵢ − yᵢ)² over the options (for yes/no that is twice the binary Brier score). RPS (scores): ranked probability score, Σₖ (Fₖ − Oₖ)² over the n − 1 thresholds of the cumulative distributions, divided by n − 1. MAE: mean |Σ i·pᵢ − truth| in levels.',
      "- ECE: top answer's probability against its hit rate, 10 equal-width bins. ECE if calibrated: the ECE a perfectly calibrated forecaster would show on the same forecasts (truths drawn from the forecasts themselves, mean of 200 draws; bench/lib/ece-floor.ts): on a set this size ECE is sampling noise up to about this value. overconfidence: mean top probability minus the share of top answers that are right (positive: the probabilities claim too much).",
      '- calibrated held out: each question read through a calibration fitted on the other four fifths (src/decision/calibration.ts, what `arbitra calibrate` fits, chosen by log loss, RPS for scores); "none" when no fit beat the probabilities as served.',
      '- order flips: choice questions whose answer changes when the options are listed in reverse order (same method both times).',
      '- orig+rev (choice only): the plain run averaged with the run whose options are listed in reverse; order flips are 0 by construction. Its ms is the plain decision plus the reversed one with the state already cached.',
      '- prior: the plain run divided by the same questions\' distribution about a content-free state ("N/A"), renormalised.',
      "- ms / decision: median wall time of one request (all of a case's questions) with a cold prefix cache.",
      '',
      'Raw figures: bench/out/quality.json; per-question answers with their truths, one file per method: bench/out/quality-samples.jsonl (plain), quality-samples-permute4.jsonl and so on.',
    ].join('\n'),
  );
  log('bench/RESULTS.md updated');
}

async function main(): Promise<void> {
  const sets = setsFromArgs(limit);
  if (sets.length === 0) return measure(loadCases(path.join(root, 'bench', 'quality', 'cases.jsonl')), null);
  for (const set of sets) await measure(set.cases, set);
}

await main();
