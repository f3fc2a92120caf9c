// `npm run bench:api`: decisions per second and p50/p99 latency of POST /v1/systemone, with exact
// kernels (the default) and with fast ones, against llama-server built from the same llama.cpp
// source (twice: with the addon's portable flags, and natively as llama.cpp builds by default), same
// model and threads, asked one prompt per question × pass (n_predict 1, n_probs) by
// the same load generator. The servers run side by side and take turns on each cell in short
// rounds, so that the machine's drift in speed falls on all of them alike. Each of our servers'
// engines is recorded as GET /health describes it after the load: its load-time determinism check
// and the path its kernels resolved to (flash attention, the KV gather, what the promise covers),
// so that a run on a GPU says which path ran. Writes bench/out/api.json and the API section of
// bench/RESULTS.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLocalEngine, type LocalEngine } from '../src/engine/local.js';
import { describeEngines, readEngineHealth, type EngineHealth } from './lib/engine-health.js';
import { modelFor } from '../src/config.js';
import { packageRoot } from '../src/paths.js';
import { engineRequestFor } from './lib/capture.js';
import { ensureLlamaTool, type LlamaToolBuild } from './lib/llama-bench.js';
import { startLlamaServer } from './lib/llama-server.js';
import { poolRounds, runRound, turnOrder, type LoadResult, type LoadRound } from './lib/load.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { freePort, serve } from './lib/serve.js';
import { metricTotal } from './lib/metrics.js';
import { sampleServer } from './lib/procs.js';
import { mib, ms } from './lib/stats.js';
import { WORKLOADS, WORKLOAD_NAMES, TICKET, type Workload } from './lib/workloads.js';

const root = packageRoot();
// The default model unless ARBITRA_MODEL names another (a catalogue name or a GGUF path).
const model = modelFor(process.env.ARBITRA_MODEL).model;
const threads = Number(process.env.BENCH_THREADS) || os.availableParallelism();
const seconds = Number(process.env.BENCH_SECONDS) || 15;
const roundCount = Number(process.env.BENCH_ROUNDS) || 3;
const roundSeconds = seconds / roundCount;
const levels = (process.env.BENCH_CONCURRENCY ?? '1,8,32').split(',').map(Number);
// Each value adds a server with exact kernels and that --max-step-ms beside the default one: the
// throughput side of the step-size trade-off, measured in the same interleaved run.
const maxSteps = (process.env.BENCH_MAX_STEP_MS ?? '').split(',').filter(Boolean).map(Number);
// BENCH_NATIVE_BASELINE=0 leaves out the natively built llama-server: the device call, whose
// llama-server is built for the GPU in its own tree, where GGML_NATIVE changes only host code.
const withNative = process.env.BENCH_NATIVE_BASELINE !== '0';
// BENCH_WORKLOADS=b measures one workload alone: (a) takes llama-server about half a minute a
// decision on 2 cores, so a cell of it at concurrency 8 alone takes half an hour there.
const workloads = (process.env.BENCH_WORKLOADS ?? WORKLOAD_NAMES.join(',')).split(',') as Workload[];
if (workloads.length === 0 || workloads.some((w) => !WORKLOAD_NAMES.includes(w))) {
  console.error(`bench:api: BENCH_WORKLOADS takes a comma-separated list of ${WORKLOAD_NAMES.join(', ')}`);
  process.exit(2);
}
const log = (msg: string): void => void process.stdout.write(`[bench:api] ${msg}\n`);
const rel = (command: string): string =>
  command
    .split(' ')
    .map((a) => (path.isAbsolute(a) ? path.relative(root, a) : a))
    .join(' ');

// Issue 19: decisions/s of ours over llama-server's, and for (b) our p50 over its p50 at most 0.8.
const GOALS = [
  { workload: 'a', levels: [8], ratio: 2, p50: null },
  { workload: 'b', levels: [1, 8], ratio: 1.2, p50: 0.8 },
] as const;

// Every request carries its own state, as real traffic does: otherwise both servers would only
// measure their caches (llama-server's slots keep whole identical prompts).
const STATE_SLOT = '\u0001STATE\u0001';
let requestNumber = 0;
const nextState = (): string => `${TICKET} (reference ${++requestNumber})`;

interface Prompts {
  /** What the baseline is asked for one decision, one prompt per branch, STATE_SLOT where the state goes. */
  prompts: string[];
  candidates: number;
  /** Tokens our engine runs through the model for one decision with a state it has not seen, on a cold engine. */
  evaluatedTokens: number;
  /** The same after another decision whose state shares this one's head (what the load sends): prefix reuse at any token. */
  evaluatedTokensWarm: number;
}

async function promptsFor(body: object, engine: LocalEngine): Promise<Prompts> {
  const info = await engine.info();
  const request = await engineRequestFor({ ...body, state: STATE_SLOT }, info);
  const framed = engine.framedText(request);
  const { evaluatedTokens } = await engine.scoreText(await engineRequestFor({ ...body, state: nextState() }, info));
  const warm = await engine.scoreText(await engineRequestFor({ ...body, state: nextState() }, info));
  return {
    prompts: framed.suffixes.map((suffix) => framed.prefix + suffix),
    candidates: request.branches[0]!.answers.length,
    evaluatedTokens,
    evaluatedTokensWarm: warm.evaluatedTokens,
  };
}

/** A server under test, up for the whole run; the load generator asks it for one decision at a time. */
interface Side {
  name: string;
  command: string;
  /** Resident memory of the process that holds the model, now. */
  residentMiB(): number;
  decide(w: Workload): Promise<boolean>;
  stop(): Promise<void>;
}

/** One of our servers, with what /health said of its engines once they had loaded. */
type OurSide = Side & { kvCellsPeak(): Promise<number>; engines: EngineHealth[] };

async function arbitraSide(kernels: 'exact' | 'fast', maxStepMs?: number): Promise<OurSide> {
  const server = await serve({
    model,
    workers: 1,
    args: ['--threads', String(threads), '--kernels', kernels, ...(maxStepMs === undefined ? [] : ['--max-step-ms', String(maxStepMs)])],
    env: { ARBITRA_RATE_LIMIT_RPS: '1000000', ARBITRA_MAX_IN_FLIGHT: '100000', ARBITRA_FREE_DAILY_DECISIONS: '100000000', ARBITRA_MONTHLY_CAP: '100000000' },
  });
  const { key, engines } = await Promise.all([server.createKey('bench@example.com', 'bench:api'), readEngineHealth(server.url)])
    .then(([k, e]) => ({ key: k.key, engines: e }))
    .catch(async (err: unknown) => {
      await server.stop();
      throw err;
    });
  const name = maxStepMs === undefined ? `ours ${kernels}` : `ours ${kernels}, max step ${maxStepMs} ms`;
  log(`${name}: ${describeEngines(engines)}`);
  return {
    name,
    command: server.command,
    engines,
    residentMiB: () => sampleServer(server.pid).find((s) => s.role === 'engine')?.rssMb ?? NaN,
    async kvCellsPeak() {
      return metricTotal(await (await fetch(`${server.url}/metrics`)).text(), 'arbitra_engine_kv_cells_peak') ?? NaN;
    },
    stop: server.stop,
    async decide(w) {
      const r = await fetch(`${server.url}/v1/systemone`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...WORKLOADS[w].body, state: nextState() }),
      });
      await r.arrayBuffer();
      return r.status === 200;
    },
  };
}

type BaselineSide = Side & { tokensPerDecision(w: Workload): number; forgetTokens(w: Workload): void };

async function llamaServerSide(binary: string, build: LlamaToolBuild, prompts: Record<Workload, Prompts>): Promise<BaselineSide> {
  // One slot per concurrent prompt up to 32 (llama-server's continuous batching), each with room for one prompt.
  const server = await startLlamaServer(binary, { model, port: await freePort(), threads, parallel: 32, ctxPerSlot: 1024 });
  // Prompt tokens llama-server reports it evaluated: shows whether its slots reused any prefix.
  const evaluated = Object.fromEntries(WORKLOAD_NAMES.map((w) => [w, { tokens: 0, prompts: 0 }])) as Record<Workload, { tokens: number; prompts: number }>;
  const ask = async (w: Workload, prompt: string): Promise<boolean> => {
    const r = await fetch(`${server.url}/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, n_predict: 1, n_probs: Math.max(prompts[w].candidates, 10), temperature: 0, cache_prompt: true }),
    });
    const j = (await r.json()) as { completion_probabilities?: unknown[]; timings?: { prompt_n?: number } };
    evaluated[w].tokens += j.timings?.prompt_n ?? 0;
    evaluated[w].prompts++;
    return r.ok && Array.isArray(j.completion_probabilities);
  };
  return {
    name: build === 'native' ? 'llama-server native' : 'llama-server',
    command: rel(server.command),
    // One process, which sampleServer reads as a primary without children.
    residentMiB: () => sampleServer(server.pid)[0]?.rssMb ?? NaN,
    stop: server.stop,
    // A decision is all of its question × pass prompts, sent together as a client would.
    async decide(w) {
      const state = nextState();
      return (await Promise.all(prompts[w].prompts.map((p) => ask(w, p.replace(STATE_SLOT, state))))).every(Boolean);
    },
    tokensPerDecision: (w) => (evaluated[w].tokens / evaluated[w].prompts) * prompts[w].prompts.length,
    // The first decisions of a workload find its slots empty and evaluate whole prompts (3,924 tokens
    // for (a) where a warm decision takes 860): counted in, they made its tokens per decision 1,044.
    forgetTokens: (w) => void (evaluated[w] = { tokens: 0, prompts: 0 }),
  };
}

interface Row {
  workload: Workload;
  concurrency: number;
  /** By side name. */
  results: Record<string, LoadResult>;
  /** Ours ÷ llama-server in decisions/s, by our side's name. */
  ratios: Record<string, number>;
  /** Ours ÷ the natively built llama-server; null without that baseline. */
  nativeRatios: Record<string, number> | null;
}

async function main(): Promise<void> {
  const serverBinary = ensureLlamaTool(root, 'llama-server', log);
  const nativeServerBinary = withNative ? ensureLlamaTool(root, 'llama-server', log, 'native') : null;

  log('building the prompts the baseline will be asked');
  const local = await createLocalEngine(model, { threads });
  const prompts = { a: await promptsFor(WORKLOADS.a.body, local), b: await promptsFor(WORKLOADS.b.body, local) };
  const facts = await local.info();
  await local.close();

  log('starting our servers and llama-server');
  const startingOurs = [arbitraSide('exact'), arbitraSide('fast'), ...maxSteps.map((v) => arbitraSide('exact', v))];
  const startingBaselines = [
    llamaServerSide(serverBinary, 'portable', prompts),
    ...(nativeServerBinary ? [llamaServerSide(nativeServerBinary, 'native', prompts)] : []),
  ];
  const settled = await Promise.allSettled([...startingOurs, ...startingBaselines]);
  const failedStart = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failedStart) {
    await Promise.all(settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value.stop()] : [])));
    throw failedStart.reason;
  }
  const ours = await Promise.all(startingOurs);
  const baselines = await Promise.all(startingBaselines);
  const [exact, fast, ...stepped] = ours as [OurSide, OurSide, ...OurSide[]];
  const [baseline, nativeBaseline] = baselines as [BaselineSide, BaselineSide?];
  const sides: Side[] = [exact, fast, ...baselines, ...stepped];
  // Our servers run in process groups of their own, which the terminal's Ctrl-C does not reach.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void Promise.all(sides.map((s) => s.stop())).finally(() => process.exit(130)));
  }

  const rows: Row[] = [];
  const memory: Record<string, { residentMiB: number; kvInUseMiB: number | null }> = {};
  const loads = [os.loadavg()[0]!];
  try {
    for (const w of workloads) {
      // The first requests pay one-off costs (connections, graph allocation) that no cell should.
      for (const side of sides) await runRound(() => side.decide(w), { concurrency: 2, seconds: 0, minPerClient: 2 });
      for (const b of baselines) b.forgetTokens(w);
      for (const c of levels) {
        const rounds = sides.map((): LoadRound[] => []);
        for (let r = 0; r < roundCount; r++) {
          for (const i of turnOrder(sides.length, r)) {
            loads.push(os.loadavg()[0]!);
            rounds[i]!.push(await runRound(() => sides[i]!.decide(w), { concurrency: c, seconds: roundSeconds }));
          }
        }
        const results = Object.fromEntries(sides.map((s, i) => [s.name, poolRounds(c, rounds[i]!)]));
        for (const s of sides) {
          const res = results[s.name]!;
          log(
            `${w} c=${c} ${s.name}: ${res.perSecond.toFixed(2)} decisions/s, p50 ${ms(res.p50ms)} ms, p99 ${ms(res.p99ms)} ms (${res.completed} ok, ${res.failed} failed; rounds ${res.roundRates.map((x) => x.toFixed(2)).join(', ')})`,
          );
        }
        rows.push({
          workload: w,
          concurrency: c,
          results,
          ratios: Object.fromEntries(ours.map((s) => [s.name, results[s.name]!.perSecond / results[baseline.name]!.perSecond])),
          nativeRatios: nativeBaseline
            ? Object.fromEntries(ours.map((s) => [s.name, results[s.name]!.perSecond / results[nativeBaseline.name]!.perSecond]))
            : null,
        });
      }
    }
    // After the whole load: the resident memory each server reached, and the KV our engines used.
    for (const s of sides) memory[s.name] = { residentMiB: s.residentMiB(), kvInUseMiB: null };
    for (const s of ours) memory[s.name]!.kvInUseMiB = mib(((await s.kvCellsPeak()) * facts.kvBytes) / facts.kvCells);
  } finally {
    await Promise.all(sides.map((s) => s.stop()));
  }

  loads.push(os.loadavg()[0]!);
  const tokens = Object.fromEntries(
    workloads.map((w) => [
      w,
      {
        oursCold: prompts[w].evaluatedTokens,
        ours: prompts[w].evaluatedTokensWarm,
        baseline: Math.round(baseline.tokensPerDecision(w)),
        nativeBaseline: nativeBaseline ? Math.round(nativeBaseline.tokensPerDecision(w)) : null,
      },
    ]),
  ) as Partial<Record<Workload, { oursCold: number; ours: number; baseline: number; nativeBaseline: number | null }>>;
  // Raw prompt tokens/s: tokens a side runs through the model per decision times its decisions/s.
  const tokensPerSecond = (r: Row, side: Side): number =>
    r.results[side.name]!.perSecond *
    (side === baseline ? tokens[r.workload]!.baseline : side === nativeBaseline ? tokens[r.workload]!.nativeBaseline! : tokens[r.workload]!.ours);
  const command = [
    ...['BENCH_WORKLOADS', 'BENCH_CONCURRENCY', 'BENCH_SECONDS', 'BENCH_ROUNDS', 'BENCH_THREADS', 'BENCH_MAX_STEP_MS', 'BENCH_NATIVE_BASELINE'].flatMap((k) =>
      process.env[k] ? [`${k}=${process.env[k]}`] : [],
    ),
    'npm run bench:api',
  ].join(' ');
  const out = {
    date: new Date().toISOString(),
    command,
    cpus: os.availableParallelism(),
    threads,
    seconds,
    rounds: roundCount,
    loadavg1: { start: loads[0]!, max: Math.max(...loads), end: loads[loads.length - 1]! },
    // Our servers' engines as /health described them: the load-time check and the resolved path.
    sides: sides.map((s) => {
      const our = ours.find((o) => o === s);
      return { name: s.name, command: s.command, ...(our ? { engines: our.engines } : {}) };
    }),
    prompts: { a: prompts.a.prompts.length, b: prompts.b.prompts.length },
    evaluatedTokensPerDecision: tokens,
    engine: { kvLayout: facts.kvLayout, maxSequences: facts.maxSequences, kvCells: facts.kvCells, kvAllocatedMiB: mib(facts.kvBytes) },
    memory,
    rows,
  };
  writeRawResult('api', out);

  const x = (ratio: number): string => `${ratio.toFixed(2)}×`;
  const { a, b } = tokens;
  const reading = [
    ...(a
      ? [
          `- (a): ours evaluates what differs of the state once per decision and the ${prompts.a.prompts.length} question × pass suffixes after it, ${a.ours} tokens (${a.oursCold} on a cold engine); llama-server evaluates each of the ${prompts.a.prompts.length} prompts in its own slot, ${a.baseline} tokens per decision by its own \`timings.prompt_n\`. That is ${x(a.baseline / a.ours)} fewer tokens: the most that sharing alone gives, reached when both evaluate tokens equally fast.`,
        ]
      : ['- (a): not measured in this run (BENCH_WORKLOADS).']),
    ...(b
      ? [
          `- (b): one question: ours evaluates ${b.ours} tokens per decision (${b.oursCold} cold), llama-server ${b.baseline}; with equal token counts the ratio is our raw prompt throughput against llama-server's, HTTP, decision layer and engine process hop included.`,
        ]
      : ['- (b): not measured in this run (BENCH_WORKLOADS).']),
  ];
  const header = [
    'workload',
    'concurrency',
    ...sides.flatMap((s) => [`${s.name} decisions/s`, 'p50 ms', 'p99 ms', 'prompt tok/s']),
    ...ours.map((s) => `${s.name} ÷ llama-server`),
    ...(nativeBaseline ? ours.map((s) => `${s.name} ÷ llama-server native`) : []),
  ];
  const table = [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---|').join('')}`,
    ...rows.map((r) => {
      const cells = sides.flatMap((s) => [
        r.results[s.name]!.perSecond.toFixed(2),
        ms(r.results[s.name]!.p50ms),
        ms(r.results[s.name]!.p99ms),
        tokensPerSecond(r, s).toFixed(0),
      ]);
      const ratios = [...ours.map((s) => `**${x(r.ratios[s.name]!)}**`), ...(r.nativeRatios ? ours.map((s) => x(r.nativeRatios![s.name]!)) : [])];
      return `| ${r.workload} | ${r.concurrency} | ${cells.join(' | ')} | ${ratios.join(' | ')} |`;
    }),
  ].join('\n');
  const goals = GOALS.map((g) => {
    const verdicts = ours.flatMap((s) =>
      g.levels.flatMap((c) => {
        const row = rows.find((r) => r.workload === g.workload && r.concurrency === c);
        if (!row) return [];
        const ratio = row.ratios[s.name]!;
        const rate = ratio >= g.ratio ? `${x(ratio)}, met` : `**${x(ratio)}, not met: ${((1 - ratio / g.ratio) * 100).toFixed(0)}% short**`;
        if (g.p50 === null) return [`${s.name} at ${c}: ${rate}`];
        const p50 = row.results[s.name]!.p50ms / row.results[baseline.name]!.p50ms;
        return [`${s.name} at ${c}: ${rate}; p50 ${p50 <= g.p50 ? `${x(p50)}, met` : `**${x(p50)}, not met**`}`];
      }),
    );
    const p50Goal = g.p50 === null ? '' : `, p50 ≤ ${g.p50}× llama-server's`;
    return `  - (${g.workload}) ≥ ${g.ratio}× decisions/s at concurrency ${g.levels.join(' and ')}${p50Goal}: ${verdicts.length > 0 ? verdicts.join('; ') : 'not measured in this run'}.`;
  });
  const exactOverFast = rows.map((r) => r.results[exact.name]!.perSecond / r.results[fast.name]!.perSecond);
  const drift = Math.max(...rows.flatMap((r) => Object.values(r.results).map((res) => Math.max(...res.roundRates) / Math.min(...res.roundRates))));
  const failures = rows.flatMap((r) =>
    sides.flatMap((s) => (r.results[s.name]!.failed > 0 ? [`${s.name} (${r.workload}, c=${r.concurrency}): ${r.results[s.name]!.failed}`] : [])),
  );
  const load = (n: number): string => n.toFixed(2);
  replaceSection(
    path.join(root, 'bench', 'RESULTS.md'),
    'API',
    `Command: \`${command}\` (${out.date}; ${out.cpus} cores, ${threads} engine threads per server, ${roundCount} rounds of ${roundSeconds.toFixed(0)} s per server and cell; 1-minute load average ${load(out.loadavg1.start)} at the start, up to ${load(out.loadavg1.max)} during the run, ${load(out.loadavg1.end)} at the end; the server under load accounts for about 2 of it).

- Model: \`${path.relative(root, model)}\`.
- Every request has its own state (the ticket plus a reference number at its end), so neither server answers from a cache of whole prompts; both reuse the head the states share (llama-server: a slot's common prefix; ours: any cached head, at any token), and ours shares each state across its questions and passes.
- (a) ${WORKLOADS.a.name}: ${prompts.a.prompts.length} prompts per decision for the baseline.
- (b) ${WORKLOADS.b.name}: ${prompts.b.prompts.length} prompt per decision.
- Ours, exact kernels (the default, batch-invariant: on which the determinism promise rests): \`${exact.command}\`.
- Ours, fast kernels (llama.cpp's stock CPU kernels, chosen by batch shape): \`${fast.command}\`.
${stepped.map((s) => `- ${s.name[0]!.toUpperCase()}${s.name.slice(1)}: \`${s.command}\`.\n`).join('')}- Load-time check and resolved path (GET /health, \`engines[]\`): ${ours.map((s) => `${s.name}: ${describeEngines(s.engines)}`).join('; ')}.
- Baseline: \`${baseline.command}\`, each prompt a \`/completion\` with \`n_predict: 1\`, \`n_probs\`, \`cache_prompt: true\`; a decision's prompts are sent together.${nativeBaseline ? ` Native baseline, asked the same way: \`${nativeBaseline.command}\`, built with GGML_NATIVE as llama.cpp builds by default (every instruction this processor has; build/bench-tools-native).` : ' No native baseline (BENCH_NATIVE_BASELINE=0).'}
- Interleaved: the ${sides.length} servers are started together and stay up for the whole run; only one is loaded at a time, the others idle. Each cell is ${roundCount} rounds; in a round each server in turn gets the cell's load for ${roundSeconds.toFixed(0)} s and then until its requests in flight finish (a round shorter than a request is one wave of requests), and the order rotates, so that each server goes first once in ${sides.length} rounds. A server's decisions/s are its completions over the summed time of its rounds, its percentiles over all of its latencies: a slow spell of the machine falls on all of them alike. One server's rounds within one cell still differed by up to ${drift.toFixed(1)}× (\`roundRates\` in bench/out/api.json).

${table}

Memory after the load (resident: the process that holds the model; ours: the engine process, ${facts.kvLayout} KV layout, ${facts.maxSequences} sequences, ${Math.round(mib(facts.kvBytes))} MiB of KV allocated; KV in use: the most any decode used, an upper bound; model file ${Math.round(mib(fs.statSync(model).size))} MiB):
${sides.map((s) => `- ${s.name}: resident ${Math.round(memory[s.name]?.residentMiB ?? NaN)} MiB${memory[s.name]?.kvInUseMiB != null ? `, KV in use ${Math.round(memory[s.name]!.kvInUseMiB!)} MiB` : ''}`).join('\n')}

Reading the table (prompt tok/s: the tokens a side runs through the model per decision, below, times its decisions/s):
- Issue 19's goals, ours ÷ llama-server:
${goals.join('\n')}
${reading.join('\n')}
- The price of the exact kernels at the API: exact ÷ fast decisions/s from ${x(Math.min(...exactOverFast))} to ${x(Math.max(...exactOverFast))} over the cells (batch-invariant tiled attention and padded GEMM against llama.cpp's shape-chosen kernels).
- ${failures.length > 0 ? `Failed decisions: ${failures.join('; ')}.` : 'No request failed.'}
`,
  );
  log('wrote bench/out/api.json and bench/RESULTS.md');
}

await main();
