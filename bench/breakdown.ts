// `npm run bench:breakdown`: where one decision's time goes, from the socket to the answer, on the
// default model: our server (one worker, exact kernels) against llama-server built from the same
// llama.cpp source, asked the same prompts one decision at a time. Ours is read from the outside
// (the client's wall time) and from the server's own metrics around each request (the route's
// duration, time in llama_decode and in the logits readout, decodes and tokens); tokenising and
// framing are timed in this process on the same requests. llama-server reports its own prompt and
// predict times. Writes bench/out/breakdown.json and the Breakdown section of bench/RESULTS.md.
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { modelFor } from '../src/config.js';
import { createLocalEngine } from '../src/engine/local.js';
import type { TextScoreRequest } from '../src/engine/types.js';
import { packageRoot } from '../src/paths.js';
import { engineRequestFor } from './lib/capture.js';
import { ensureLlamaTool } from './lib/llama-bench.js';
import { startLlamaServer } from './lib/llama-server.js';
import { metricTotal, readHistograms } from './lib/metrics.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { freePort, serve } from './lib/serve.js';
import { latencySummary } from './lib/stats.js';
import { engineRoundTrips } from './lib/transport.js';
import { WORKLOADS, WORKLOAD_NAMES, TICKET, type Workload } from './lib/workloads.js';
import { pathReport } from '../src/engine/exact-path.js';

const root = packageRoot();
// The default model unless ARBITRA_MODEL names another (a catalogue name or a GGUF path).
const model = modelFor(process.env.ARBITRA_MODEL).model;
const threads = Number(process.env.BENCH_THREADS) || os.availableParallelism();
const requests = Number(process.env.BENCH_REQUESTS) || 8;
const log = (msg: string): void => void process.stdout.write(`[bench:breakdown] ${msg}\n`);
const median = (xs: readonly number[]): number => latencySummary(xs).p50;

// Each decision has a state of its own that differs from the others near its end, as in bench:api.
let stateNumber = 0;
const nextState = (): string => `${TICKET} (reference ${++stateNumber})`;

/** One decision on our server: what the client saw and what the server's metrics moved by. */
interface Ours {
  wallMs: number;
  routeMs: number;
  decodeMs: number;
  readoutMs: number;
  decodes: number;
  tokens: number;
}

/** One decision on llama-server: its prompts sent together; its own timings, the longest of them (its slots run together) and the tokens summed. */
interface Theirs {
  wallMs: number;
  promptMs: number;
  predictMs: number;
  promptTokens: number;
}

async function scrape(url: string): Promise<{ routeS: number; decodeS: number; readoutS: number; decodes: number; tokens: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const route = readHistograms(text, 'arbitra_http_request_duration_seconds', undefined, { route: 'systemone' }).get('');
  const total = (name: string): number => metricTotal(text, name) ?? NaN;
  return {
    routeS: route?.sum ?? 0,
    decodeS: total('arbitra_engine_decode_seconds_total'),
    readoutS: total('arbitra_engine_readout_seconds_total'),
    decodes: total('arbitra_engine_decodes_total'),
    tokens: total('arbitra_engine_tokens_evaluated_total'),
  };
}

async function main(): Promise<void> {
  const serverBinary = ensureLlamaTool(root, 'llama-server', log);

  // Tokenising and framing, in this process, on requests built as the decision layer builds them.
  log('timing tokenising and framing in process');
  const local = await createLocalEngine(model, { threads });
  const info = await local.info();
  pathReport(info.kernelPath).forEach((line) => log(line));
  const bodies = (w: Workload) => Array.from({ length: requests }, () => ({ ...WORKLOADS[w].body, state: nextState() }));
  const tokenizeMs: Record<Workload, number> = { a: NaN, b: NaN };
  const hopMs: Record<Workload, number> = { a: NaN, b: NaN };
  const prompts: Record<Workload, string[][]> = { a: [], b: [] };
  const sent: Record<Workload, object[]> = { a: bodies('a'), b: bodies('b') };
  for (const w of WORKLOAD_NAMES) {
    const built: TextScoreRequest[] = [];
    for (const body of sent[w]) built.push(await engineRequestFor(body, info));
    const times = built.map((request) => {
      const t0 = performance.now();
      local.tokenizeRequest(request);
      return performance.now() - t0;
    });
    tokenizeMs[w] = median(times);
    prompts[w] = built.map((request) => {
      const framed = local.framedText(request);
      return framed.suffixes.map((suffix) => framed.prefix + suffix);
    });
    hopMs[w] = median(await engineRoundTrips(built[0]!, 500));
  }
  await local.close();

  log('starting our server');
  const server = await serve({
    model,
    workers: 1,
    args: ['--threads', String(threads)],
    env: { ARBITRA_RATE_LIMIT_RPS: '1000000', ARBITRA_FREE_DAILY_DECISIONS: '100000000', ARBITRA_MONTHLY_CAP: '100000000' },
  });
  const ours: Record<Workload, Ours[]> = { a: [], b: [] };
  let first: Ours | null = null;
  try {
    const { key } = await server.createKey('bench@example.com', 'bench:breakdown');
    const decide = async (body: object): Promise<Ours> => {
      // The engine's counters are read through a cache of a quarter second: wait it out.
      await sleep(300);
      const before = await scrape(server.url);
      const t0 = performance.now();
      const r = await fetch(`${server.url}/v1/systemone`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await r.arrayBuffer();
      const wallMs = performance.now() - t0;
      if (r.status !== 200) throw new Error(`our server answered ${r.status}`);
      await sleep(300);
      const after = await scrape(server.url);
      return {
        wallMs,
        routeMs: (after.routeS - before.routeS) * 1000,
        decodeMs: (after.decodeS - before.decodeS) * 1000,
        readoutMs: (after.readoutS - before.readoutS) * 1000,
        decodes: after.decodes - before.decodes,
        tokens: after.tokens - before.tokens,
      };
    };
    // The first decision on a fresh engine: nothing cached.
    first = await decide({ ...WORKLOADS.b.body, state: nextState() });
    for (const w of WORKLOAD_NAMES) {
      for (const body of sent[w]) ours[w].push(await decide(body));
      log(`${w}: ours ${median(ours[w].map((o) => o.wallMs)).toFixed(0)} ms per decision`);
    }
  } finally {
    await server.stop();
  }

  log('starting llama-server');
  const baseline = await startLlamaServer(serverBinary, { model, port: await freePort(), threads, parallel: 32, ctxPerSlot: 1024 });
  const theirs: Record<Workload, Theirs[]> = { a: [], b: [] };
  try {
    const ask = async (prompt: string) => {
      const r = await fetch(`${baseline.url}/completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt, n_predict: 1, n_probs: 10, temperature: 0, cache_prompt: true }),
      });
      const j = (await r.json()) as { timings?: { prompt_n?: number; prompt_ms?: number; predicted_ms?: number } };
      if (!r.ok) throw new Error(`llama-server answered ${r.status}`);
      return j.timings ?? {};
    };
    for (const w of WORKLOAD_NAMES) {
      // One decision first, so that its slots hold the head the states share, as ours does.
      await Promise.all(prompts[w][0]!.map(ask));
      for (const decision of prompts[w]) {
        const t0 = performance.now();
        const timings = await Promise.all(decision.map(ask));
        const wallMs = performance.now() - t0;
        theirs[w].push({
          wallMs,
          promptMs: Math.max(...timings.map((t) => t.prompt_ms ?? 0)),
          predictMs: Math.max(...timings.map((t) => t.predicted_ms ?? 0)),
          promptTokens: timings.reduce((s, t) => s + (t.prompt_n ?? 0), 0),
        });
      }
      log(`${w}: llama-server ${median(theirs[w].map((o) => o.wallMs)).toFixed(0)} ms per decision`);
    }
  } finally {
    await baseline.stop();
  }

  const out = {
    date: new Date().toISOString(),
    model: path.relative(root, model),
    threads,
    requests,
    tokenizeMs,
    hopMs,
    first,
    ours,
    theirs,
    ourCommand: server.command,
    baselineCommand: baseline.command,
  };
  writeRawResult('breakdown', out);

  const f = (x: number): string => (Number.isNaN(x) ? '–' : x < 10 ? x.toFixed(1) : x.toFixed(0));
  const med = <T>(rows: readonly T[], pick: (r: T) => number): number => median(rows.map(pick));
  const rowsFor = (w: Workload): string[][] => {
    const o = ours[w];
    const t = theirs[w];
    const wall = med(o, (r) => r.wallMs);
    const route = med(o, (r) => r.routeMs);
    const decode = med(o, (r) => r.decodeMs);
    const readout = med(o, (r) => r.readoutMs);
    const rest = med(o, (r) => r.routeMs - r.decodeMs - r.readoutMs) - tokenizeMs[w];
    return [
      [`(${w}) socket to answer, as the client sees it`, f(wall), f(med(t, (r) => r.wallMs))],
      [`(${w}) HTTP outside the route (connection, parsing, writing the reply)`, f(wall - route), '–'],
      [`(${w}) tokenising and framing`, f(tokenizeMs[w]), '–'],
      [`(${w}) validation, decision layer, worker → engine hop, queueing, answer building`, f(rest), '–'],
      [`(${w}) of which the worker → engine call alone (the engine service, a fake engine; median of 500)`, hopMs[w].toFixed(2), '–'],
      [
        `(${w}) llama_decode: ${f(med(o, (r) => r.decodes))} decodes, ${f(med(o, (r) => r.tokens))} tokens (llama-server: ${f(med(t, (r) => r.promptTokens))} prompt tokens)`,
        f(decode),
        f(med(t, (r) => r.promptMs)),
      ],
      [`(${w}) logits readout (ours) / one predicted token (llama-server)`, f(readout), f(med(t, (r) => r.predictMs))],
      [
        `(${w}) prompt tokens/s in the model`,
        f(med(o, (r) => r.tokens) / (decode / 1000)),
        f(med(t, (r) => r.promptTokens) / (med(t, (r) => r.promptMs) / 1000)),
      ],
    ];
  };
  const table = [['stage, median of ' + requests + ' decisions', 'ours ms', 'llama-server ms'], ['---', '---', '---'], ...WORKLOAD_NAMES.flatMap(rowsFor)]
    .map((r) => `| ${r.join(' | ')} |`)
    .join('\n');
  replaceSection(
    path.join(root, 'bench', 'RESULTS.md'),
    'Breakdown',
    `Command: \`npm run bench:breakdown\` (${out.date}; model \`${out.model}\`, ${threads} threads, ${os.availableParallelism()} cores; one decision at a time, each with a state of its own that differs from the others at its end).

- Ours: \`${server.command}\`, one worker; read from the client's wall time and from the server's metrics before and after each decision (\`arbitra_http_request_duration_seconds{route="systemone"}\`, \`arbitra_engine_decode_seconds_total\`, \`arbitra_engine_readout_seconds_total\`, decodes and tokens). Tokenising and framing are timed in the bench's own process on the same requests (the server does the same work).
- llama-server: \`${path.relative(root, baseline.command.split(' ')[0]!)} …\` (as bench:api), a decision's prompts sent together; its own \`timings\`: the longest prompt and predict times of them (its slots decode together) and their prompt tokens summed.
- The first decision on a fresh server, nothing cached: ${first ? `${f(first.wallMs)} ms; the engine meanwhile spent ${f(first.decodeMs)} ms in ${f(first.decodes)} decode(s) of ${f(first.tokens)} tokens, the load-time self-test's included` : 'not measured'}.

${table}
`,
  );
  log('wrote bench/out/breakdown.json and bench/RESULTS.md');
}

await main();
