// `npm run bench:engine`: prompt tokens/s of score() on a realistic decision workload (one ~200-token
// state, 4 questions of ~40 tokens, 4 options each, 4 permutations each = 16 branches) against the
// prefill tokens/s that llama-bench, built from the same llama.cpp source with the same flags,
// measures for the same model and thread count (llama-bench built from deps/llama.cpp alone runs
// llama.cpp's own products), with the engine's resident memory and KV bytes at
// the defaults (the shared pool), at 256 sequences and in the copied layout. llama-bench runs twice
// over: built with the addon's portable flags, and natively as llama.cpp builds by default. The
// defaults also run once per CPU variant this processor executes, each in a process of its own
// (a process loads one variant), with our quantized products and with llama.cpp's. Writes
// bench/out/engine.json and the engine section of bench/RESULTS.md.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAddon } from '../src/engine/native.js';
import { createLocalEngine, type LocalEngine } from '../src/engine/local.js';
import { modelFor } from '../src/config.js';
import { packageRoot } from '../src/paths.js';
import type { CpuProducts, EngineOptions } from '../src/engine/types.js';
import { engineRequestFor } from './lib/capture.js';
import { cpuSeconds, ensureLlamaTool, runLlamaBench, type LlamaBenchRun, type LlamaToolBuild } from './lib/llama-bench.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { mib } from './lib/stats.js';
import { pathReport } from '../src/engine/exact-path.js';

const root = packageRoot();
// The default model unless ARBITRA_MODEL names another (a catalogue name or a GGUF path).
const model = modelFor(process.env.ARBITRA_MODEL).model;
const threads = Number(process.env.BENCH_THREADS) || os.availableParallelism();
const iterations = Number(process.env.BENCH_ITERATIONS) || 8;
const PASSES = 4;
// Set in the child that measures one CPU variant: it logs to stderr and prints its figures as JSON.
const CHILD_VARIANT = process.env.BENCH_ENGINE_VARIANT;
const log = (msg: string): void =>
  void (CHILD_VARIANT ? process.stderr : process.stdout).write(`[bench:engine${CHILD_VARIANT ? ` ${CHILD_VARIANT}` : ''}] ${msg}\n`);

const STATE =
  'Ticket #8812, opened Tuesday 09:14 by the operations manager of a mid-sized logistics company on the Business plan ' +
  '(42 seats, annual contract, renewal in five weeks). "Since the update last Thursday our dispatchers cannot export the ' +
  'daily route sheets to PDF: the button spins for a minute and then shows error 502. We worked around it by printing from ' +
  'the browser, but the drivers now get sheets without the barcodes, so the warehouse scanners reject them and every ' +
  'delivery is checked by hand. That costs us about two hours each morning. We were also billed for 45 seats this month ' +
  'although we removed three users in March, and nobody answered the two emails I sent about that. If this is not fixed ' +
  'before the end of the week I will have to recommend to our director that we do not renew. Please call me back today; ' +
  'I am at my desk until 17:00." Previous tickets from this customer: two, both about invoices, both closed within a day.';

// The decision layer builds the prompts (frame, layout, orderings), exactly as a request would.
const QUESTIONS = {
  topic: {
    type: 'choice',
    instructions: 'Which area does the main problem in this ticket belong to?',
    criteria: { billing: 'invoices, seats, payments', export: 'PDF or file export features', access: 'logins and permissions', other: null },
  },
  urgency: {
    type: 'choice',
    instructions: 'How quickly should support respond to this customer?',
    criteria: { today: 'call back within hours', 'this week': null, 'next week': null, 'no reply needed': null },
  },
  churn: {
    type: 'choice',
    instructions: 'How likely is this customer to cancel or not renew the contract?',
    criteria: { 'very likely': 'explicit threat to leave', possible: null, unlikely: null, unknown: null },
  },
  team: {
    type: 'choice',
    instructions: 'Which team should own the follow-up on this ticket?',
    criteria: { engineering: 'bugs and outages', finance: 'invoice corrections', 'account management': 'renewals and escalations', 'first-line support': null },
  },
};

interface Workload {
  prefix: Int32Array;
  branches: { suffix: Int32Array; candidates: Int32Array }[];
}

async function workload(local: LocalEngine, state: string): Promise<Workload> {
  const request = await engineRequestFor({ state, questions: QUESTIONS, options: { debias: 'permute', debias_passes: PASSES } }, await local.info());
  const { prefix, suffixes } = local.tokenizeRequest(request);
  return { prefix, branches: suffixes.map((suffix, i) => ({ suffix, candidates: Int32Array.from(request.branches[i]!.answers.flat()) })) };
}

interface Measured {
  variant: string;
  iterations: number;
  prefixTokens: number;
  suffixTokens: number;
  /** Prompt tokens the request represents: the prefix once plus every suffix. */
  promptTokens: number;
  /** Tokens one prompt per branch would evaluate: prefix + suffix for every branch. */
  perBranchTokens: number;
  evaluatedTokens: number;
  cachedTokens: number;
  medianMs: number;
  meanMs: number;
  minMs: number;
  usefulTokensPerSecond: number;
  evaluatedTokensPerSecond: number;
  perBranchEquivalentTokensPerSecond: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function measure(variant: string, run: (i: number) => Promise<{ w: Workload; evaluated: number; cached: number; ms: number }>): Promise<Measured> {
  const times: number[] = [];
  let evaluated = 0;
  let cached = 0;
  let w: Workload | undefined;
  for (let i = 0; i < iterations; i++) {
    const r = await run(i);
    times.push(r.ms);
    evaluated += r.evaluated;
    cached += r.cached;
    w = r.w;
  }
  const prefixTokens = w!.prefix.length;
  const suffixTokens = w!.branches.reduce((n, b) => n + b.suffix.length, 0);
  const promptTokens = prefixTokens + suffixTokens;
  const perBranchTokens = w!.branches.length * prefixTokens + suffixTokens;
  const med = median(times);
  const perCall = evaluated / iterations;
  return {
    variant,
    iterations,
    prefixTokens,
    suffixTokens,
    promptTokens,
    perBranchTokens,
    evaluatedTokens: perCall,
    cachedTokens: cached / iterations,
    medianMs: med,
    meanMs: times.reduce((a, b) => a + b, 0) / times.length,
    minMs: Math.min(...times),
    usefulTokensPerSecond: promptTokens / (med / 1000),
    evaluatedTokensPerSecond: perCall / (med / 1000),
    perBranchEquivalentTokensPerSecond: perBranchTokens / (med / 1000),
  };
}

const fmt = (n: number, digits = 0) => n.toFixed(digits);

interface EngineRun {
  name: string;
  info: Awaited<ReturnType<LocalEngine['info']>>;
  base: Workload;
  cold: Measured;
  warm: Measured;
  memory: {
    kvLayout: string;
    maxSequences: number;
    kvCells: number;
    /** The KV buffer llama.cpp allocates at load. */
    kvAllocatedMiB: number;
    /** KV the prefixes held after the run, and the most any decode used (upper bounds, see EngineStats). */
    kvHeldMiB: number;
    kvPeakMiB: number;
    /** This process's resident memory before the engine loaded, after it loaded, and after the run. */
    rssBeforeMiB: number;
    rssLoadedMiB: number;
    rssAfterMiB: number;
  };
}

async function runEngine(name: string, options: Partial<EngineOptions>): Promise<EngineRun> {
  log(`-- ${name}`);
  const rssBefore = process.memoryUsage().rss;
  const local = await createLocalEngine(model, { threads, ...options });
  const rssLoaded = process.memoryUsage().rss;
  const engine = local.engine;
  const info = await local.info();
  pathReport(info.kernelPath).forEach((line) => log(line));
  const call = async (w: Workload) => {
    const t0 = performance.now();
    const r = await engine.score(w.prefix, w.branches);
    return { w, evaluated: r.evaluated, cached: r.cached, ms: performance.now() - t0 };
  };

  const base = await workload(local, STATE);
  log(`workload: prefix ${base.prefix.length} tokens, ${base.branches.length} branches of ${base.branches.map((b) => b.suffix.length).join('/')} tokens`);
  for (let i = 0; i < 2; i++) await call(await workload(local, `Warm-up ${i}. ${STATE}`));

  // Cold: a different state each time, so the prefix is always evaluated (no prefix-cache hit).
  const cold = await measure('prefix-cache cold', async (i) => call(await workload(local, `Case ${1000 + i}. ${STATE}`)));
  log(`cold: median ${fmt(cold.medianMs)} ms, ${fmt(cold.usefulTokensPerSecond)} useful tok/s, ${fmt(cold.evaluatedTokensPerSecond)} evaluated tok/s`);
  // Warm: the same state asked again, as a client re-asking about one state does.
  await call(base);
  const warm = await measure('prefix-cache warm', () => call(base));
  log(`warm: median ${fmt(warm.medianMs)} ms, ${fmt(warm.usefulTokensPerSecond)} useful tok/s, ${fmt(warm.evaluatedTokensPerSecond)} evaluated tok/s`);
  const stats = engine.stats();
  const perCell = info.kvBytes / info.kvCells;
  const memory = {
    kvLayout: info.kvLayout,
    maxSequences: info.maxSequences,
    kvCells: info.kvCells,
    kvAllocatedMiB: mib(info.kvBytes),
    kvHeldMiB: mib(stats.kvCellsHeld * perCell),
    kvPeakMiB: mib(stats.kvCellsPeak * perCell),
    rssBeforeMiB: mib(rssBefore),
    rssLoadedMiB: mib(rssLoaded),
    rssAfterMiB: mib(process.memoryUsage().rss),
  };
  log(`memory: resident ${fmt(memory.rssAfterMiB)} MiB, KV allocated ${fmt(memory.kvAllocatedMiB)} MiB, peak in use ${fmt(memory.kvPeakMiB)} MiB`);
  await local.close();
  return { name, info, base, cold, warm, memory };
}

interface VariantRun {
  variant: string;
  /** Whose quantized products the child ran, as its engine reports them: ours (native/ggml-cpu) or llama.cpp's. */
  products: CpuProducts;
  cold: Measured;
  warm: Measured;
}

/**
 * The defaults on one CPU variant, in a process of its own: this file again, as BENCH_ENGINE_VARIANT's
 * child. The products are chosen when the weights load, so llama.cpp's need a process too.
 */
function variantRun(variant: string, products: CpuProducts): VariantRun {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url)], {
    env: { ...process.env, BENCH_ENGINE_VARIANT: variant, ARBITRA_INT8_KERNELS: products === 'arbitra' ? 'on' : 'off' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 << 20,
  });
  const run = JSON.parse(out.trim().split('\n').at(-1)!) as VariantRun;
  // A row names the products that ran, never the ones asked for.
  if (run.products !== products) throw new Error(`the ${variant} child was to run ${products}'s products and its engine reports ${run.products}'s`);
  return run;
}

const PP_TOKENS = 512;

/** llama-bench pp512, each build once, one after the other. */
function referenceRound(binaries: Record<LlamaToolBuild, string>, when: string): Record<LlamaToolBuild, LlamaBenchRun> {
  const round = {} as Record<LlamaToolBuild, LlamaBenchRun>;
  for (const build of ['portable', 'native'] as const) {
    round[build] = runLlamaBench(binaries[build], model, { promptTokens: PP_TOKENS, threads, repetitions: 3 });
    log(`llama-bench ${build} pp${PP_TOKENS} (${when}): ${fmt(round[build].tokensPerSecond, 1)} ± ${fmt(round[build].stddev, 1)} tok/s`);
  }
  return round;
}

async function main(): Promise<void> {
  if (CHILD_VARIANT) {
    const run = await runEngine(`defaults on CPU variant ${CHILD_VARIANT}`, { cpuVariant: CHILD_VARIANT });
    process.stdout.write(
      `${JSON.stringify({ variant: run.info.cpuVariant, products: run.info.cpuProducts, cold: run.cold, warm: run.warm } satisfies VariantRun)}\n`,
    );
    return;
  }
  const binaries: Record<LlamaToolBuild, string> = {
    portable: ensureLlamaTool(root, 'llama-bench', log),
    native: ensureLlamaTool(root, 'llama-bench', log, 'native'),
  };
  const loadBefore = os.loadavg();
  const cpuBefore = cpuSeconds();
  const wallBefore = performance.now();
  // The references run before and after the engines (never beside them); the faster run of each
  // build is used, so a neighbour slowing one of them cannot flatter a ratio.
  const rounds = [referenceRound(binaries, 'before')];
  const variants = loadAddon()
    .cpuVariants()
    .filter((v) => v.runnable)
    .map((v) => v.name);
  const byVariant = variants.flatMap((v) => [variantRun(v, 'arbitra'), variantRun(v, 'llama.cpp')]);

  // The defaults first: the figures the goals are read from, on a process no other engine has used.
  const configs: { name: string; options: Partial<EngineOptions> }[] = [
    { name: 'defaults (shared pool, 64 sequences)', options: {} },
    { name: 'shared pool, --max-sequences 256', options: { maxSequences: 256 } },
    { name: 'copied layout, --max-sequences 32 (before)', options: { kvLayout: 'copied', maxSequences: 32 } },
  ];
  const runs: EngineRun[] = [];
  for (const config of configs) runs.push(await runEngine(config.name, config.options));
  const { cold, warm, info, base } = runs[0]!;

  rounds.push(referenceRound(binaries, 'after'));
  const best = (build: LlamaToolBuild) => (rounds[0]![build].tokensPerSecond >= rounds[1]![build].tokensPerSecond ? rounds[0]![build] : rounds[1]![build]);
  const ref = best('portable');
  const nativeRef = best('native');
  const refRuns = rounds.map((r) => r.portable);
  const loadAfter = os.loadavg();
  const cpuAfter = cpuSeconds();
  const wallSeconds = (performance.now() - wallBefore) / 1000;
  // CPU time the rest of the machine used while we measured (our own process and llama-bench excluded).
  const otherCpu = Math.max(0, cpuAfter.machine - cpuBefore.machine - (cpuAfter.self - cpuBefore.self));
  const otherShare = otherCpu / (wallSeconds * os.availableParallelism());

  const ratio = (m: Measured) => m.usefulTokensPerSecond / ref.tokensPerSecond;
  const nativeRatio = (m: Measured) => m.usefulTokensPerSecond / nativeRef.tokensPerSecond;
  const fileSize = fs.statSync(model).size;
  const evaluatedShare = cold.evaluatedTokens / cold.perBranchTokens;
  const result = {
    date: new Date().toISOString(),
    command: 'npm run bench:engine',
    machine: {
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.availableParallelism(),
      threads,
      memoryGb: Math.round(os.totalmem() / 1e9),
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadAfter,
      otherProcessesCpuSeconds: otherCpu,
      otherProcessesShareOfCores: otherShare,
      wallSeconds,
      node: process.version,
    },
    model: {
      path: path.relative(root, model),
      quant: info.quantMethod,
      parameters: info.parameters,
      llamaBuild: info.llamaBuild,
      backend: info.backend,
      cpuVariant: info.cpuVariant,
    },
    engineOptions: { contextSize: info.contextSize, maxSequences: info.maxSequences, threads: info.threads },
    llamaBench: { used: ref, runs: refRuns, native: { used: nativeRef, runs: rounds.map((r) => r.native) } },
    cpuVariants: byVariant,
    workload: {
      questions: Object.keys(QUESTIONS).length,
      options: 4,
      passes: PASSES,
      branches: base.branches.length,
      prefixTokens: base.prefix.length,
      suffixTokens: base.branches.map((b) => b.suffix.length),
    },
    cold,
    warm,
    engines: runs.map((r) => ({ name: r.name, cold: r.cold, warm: r.warm, memory: r.memory })),
    ratios: {
      usefulVsLlamaBenchCold: ratio(cold),
      usefulVsLlamaBenchWarm: ratio(warm),
      usefulVsNativeLlamaBenchCold: nativeRatio(cold),
      nativeVsPortableLlamaBench: nativeRef.tokensPerSecond / ref.tokensPerSecond,
      evaluatedVsLlamaBenchCold: cold.evaluatedTokensPerSecond / ref.tokensPerSecond,
      sharedPrefixEvaluatedVsPerBranch: evaluatedShare,
    },
    targets: { usefulVsLlamaBench: 0.8, sharedPrefixEvaluatedVsPerBranch: 0.4 },
  };
  writeRawResult('engine', result);

  const busy = otherShare > 0.05;
  const row = (m: Measured) =>
    `| ${m.variant} | ${fmt(m.medianMs)} | ${m.promptTokens} | ${fmt(m.evaluatedTokens)} | ${fmt(m.cachedTokens)} | ${fmt(m.usefulTokensPerSecond)} | ${fmt(m.evaluatedTokensPerSecond)} | ${fmt(ratio(m), 2)} |`;
  const body = [
    `Run ${result.date.slice(0, 16).replace('T', ' ')} UTC with \`npm run bench:engine\` (${iterations} timed calls per variant after 2 warm-up calls; median shown).`,
    '',
    `Machine: ${result.machine.cpu}, ${result.machine.cores} cores, ${threads} threads for both llama-bench and the engine, ${result.machine.memoryGb} GB RAM, ${info.backend} backend, llama.cpp ${info.llamaBuild}, Node ${process.version}.`,
    `Load average (1 min) ${fmt(loadBefore[0]!, 2)} before the run. Other processes used ${fmt(otherCpu, 1)} CPU-seconds during the ${fmt(wallSeconds)} s run (${fmt(otherShare * 100)}% of the cores)` +
      (busy
        ? `: they shared the ${result.machine.cores} cores with the benchmark, so absolute figures are lower and noisier than on a quiet machine.`
        : ': the machine was quiet.'),
    '',
    `Model: ${result.model.path} (${info.quantMethod}). Workload: one state of ${base.prefix.length} tokens, ${Object.keys(QUESTIONS).length} choice questions × 4 options × ${PASSES} permutations = ${base.branches.length} branches of ${Math.min(...result.workload.suffixTokens)}–${Math.max(...result.workload.suffixTokens)} tokens, laid out by src/decision (prompt.ts and kinds/).`,
    '',
    `Reference: \`${ref.command.replaceAll(root + '/', '')}\`, run before and after the engine: ${refRuns.map((r) => `${fmt(r.tokensPerSecond, 1)} ± ${fmt(r.stddev, 1)}`).join(' and ')} tok/s prompt processing (pp${PP_TOKENS}); the faster, **${fmt(ref.tokensPerSecond, 1)} tok/s**, is the reference.`,
    `Native reference (GGML_NATIVE, as llama.cpp builds by default; \`build/bench-tools-native\`), interleaved with it: ${rounds.map((r) => `${fmt(r.native.tokensPerSecond, 1)} ± ${fmt(r.native.stddev, 1)}`).join(' and ')} tok/s; the faster, **${fmt(nativeRef.tokensPerSecond, 1)} tok/s**, ${fmt(nativeRef.tokensPerSecond / ref.tokensPerSecond, 2)}× the portable one. The engine's tables below run on CPU variant **${info.cpuVariant}**.`,
    '',
    '| variant | median ms | prompt tokens | evaluated | cached | useful tok/s | evaluated tok/s | useful ÷ llama-bench |',
    '|---|---|---|---|---|---|---|---|',
    row(cold),
    row(warm),
    '',
    `By CPU variant and whose quantized products (the defaults, each in a process of its own, between the two reference rounds; ours: native/ggml-cpu, llama.cpp's: \`ARBITRA_INT8_KERNELS=off\`; goals of issue 53: cold useful tok/s at least 1.5× native llama-bench and 2× the portable one):`,
    '',
    '| CPU variant | products | cold median ms | cold useful tok/s | ÷ llama-bench portable | ÷ llama-bench native | warm median ms | warm useful tok/s |',
    '|---|---|---|---|---|---|---|---|',
    ...byVariant.map(
      (v) =>
        `| ${v.variant} | ${v.products === 'arbitra' ? 'ours' : "llama.cpp's"} | ${fmt(v.cold.medianMs)} | ${fmt(v.cold.usefulTokensPerSecond)} | ${fmt(ratio(v.cold), 2)} | ${fmt(nativeRatio(v.cold), 2)} | ${fmt(v.warm.medianMs)} | ${fmt(v.warm.usefulTokensPerSecond)} |`,
    ),
    '',
    ...variants.map((name) => {
      const [ours, theirs] = (['arbitra', 'llama.cpp'] as const).map((p) => byVariant.find((v) => v.variant === name && v.products === p)!);
      return `- ${name}: our products ÷ llama.cpp's, cold useful tok/s: **${fmt(ours!.cold.usefulTokensPerSecond / theirs!.cold.usefulTokensPerSecond, 2)}×**; warm: ${fmt(ours!.warm.usefulTokensPerSecond / theirs!.warm.usefulTokensPerSecond, 2)}×.`;
    }),
    '',
    '- useful tok/s: prompt tokens the request represents (the state once plus every suffix) ÷ wall time of the score() call.',
    '',
    `Memory and speed by KV layout (the same workload; resident: this process after the run, model file ${fmt(mib(fileSize))} MiB; KV in use: the most any decode used, an upper bound):`,
    '',
    '| engine | KV allocated MiB | KV in use MiB | resident MiB | resident − model file MiB | cold median ms | cold useful ÷ llama-bench |',
    '|---|---|---|---|---|---|---|',
    ...runs.map(
      (r) =>
        `| ${r.name} | ${fmt(r.memory.kvAllocatedMiB)} | ${fmt(r.memory.kvPeakMiB)} | ${fmt(r.memory.rssAfterMiB)} | ${fmt(r.memory.rssAfterMiB - mib(fileSize))} | ${fmt(r.cold.medianMs)} | ${fmt(ratio(r.cold), 2)} |`,
    ),
    '',
    `- Shared-prefix path vs one prompt per branch (cold): ${fmt(cold.evaluatedTokens)} evaluated tokens vs ${cold.perBranchTokens} (${base.branches.length} × prefix + suffix) = **${fmt(evaluatedShare, 3)}** (target ≤ 0.4).`,
    `- Useful tok/s ÷ llama-bench pp tok/s, cold: **${fmt(ratio(cold), 2)}** (target ≥ 0.8), ÷ the native llama-bench **${fmt(nativeRatio(cold), 2)}**; warm (prefix cached): ${fmt(ratio(warm), 2)}.`,
    `- Counted as one prompt per branch, the cold call would have processed ${fmt(cold.perBranchEquivalentTokensPerSecond)} tok/s (${fmt(cold.perBranchEquivalentTokensPerSecond / ref.tokensPerSecond, 2)} × llama-bench).`,
    '',
    'Raw figures: bench/out/engine.json.',
  ].join('\n');
  replaceSection(path.join(root, 'bench', 'RESULTS.md'), 'Engine (`npm run bench:engine`)', body);
  process.stdout.write(`${body}\n`);
}

await main();
