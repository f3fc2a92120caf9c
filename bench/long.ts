// `npm run bench:long`: what the long lane costs. The default engine answers a prompt longer than
// --ctx-size in a second KV cache (the long lane) instead of refusing it; this measures, on one
// model in one run: load time and resident memory with and without that lane, a short request's
// latency with and without it (the lane must not slow ordinary requests), and how long one question
// about a state of 2k to 30k tokens takes, as tokens/s relative to a state the main lane holds.
// Writes bench/out/long.json and the "Long inputs" section of bench/RESULTS.md.
import os from 'node:os';
import path from 'node:path';
import { LlamaEngine } from '../src/engine/llama-engine.js';
import { packageRoot } from '../src/paths.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { mib } from './lib/stats.js';
import { stateOf, timeOne } from './lib/long-state.js';
import { pathReport, servedPath } from '../src/engine/exact-path.js';

const root = packageRoot();
const model = process.env.ARBITRA_MODEL ?? path.join(root, 'models', 'gemma-3-270m-q4_k_m.gguf');
const sizes = (process.env.BENCH_LONG_TOKENS ?? '2000,8000,16000,30000').split(',').map(Number);
const repeats = Number(process.env.BENCH_ITERATIONS) || 5;
const log = (msg: string): void => void process.stdout.write(`[bench:long] ${msg}\n`);

interface Loaded {
  engine: LlamaEngine;
  loadMs: number;
  rssMb: number;
}

async function load(longContextSize: number): Promise<Loaded> {
  const before = process.memoryUsage().rss;
  const started = performance.now();
  const engine = await LlamaEngine.load(model, { longContextSize });
  return { engine, loadMs: performance.now() - started, rssMb: mib(process.memoryUsage().rss - before) };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Median latency of a 200-token request with a fresh (uncached) state each time. */
async function shortLatency(engine: LlamaEngine): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) times.push(await timeOne(engine, stateOf(engine, 200, `short ${i} ${Math.random()}`)));
  return median(times);
}

const without = await load(0);
const withoutShort = await shortLatency(without.engine);
await without.engine.close();
const lane = await load(32768);
const withShort = await shortLatency(lane.engine);
const facts = lane.engine.facts;
log(`${path.basename(model)}: main lane ${facts.maxSequences} × ${facts.contextSize}, long lane ${facts.longSequences} × ${facts.longContextSize}`);
pathReport(servedPath(facts)).forEach((line) => log(line));

const long: { tokens: number; lane: string; ms: number; tokensPerSecond: number }[] = [];
for (const tokens of sizes.filter((n) => n < facts.longContextSize - 64)) {
  const ms = await timeOne(lane.engine, stateOf(lane.engine, tokens, `long ${tokens}`));
  long.push({ tokens, lane: tokens + 32 <= facts.contextSize ? 'main' : 'long', ms, tokensPerSecond: tokens / (ms / 1000) });
  log(`${tokens} tokens: ${(ms / 1000).toFixed(1)} s`);
}
await lane.engine.close();

const result = {
  model: path.basename(model),
  date: new Date().toISOString(),
  cores: os.availableParallelism(),
  loadMs: { without: without.loadMs, with: lane.loadMs },
  rssMb: { without: without.rssMb, with: lane.rssMb },
  shortMs: { without: withoutShort, with: withShort },
  long,
};
writeRawResult('long', result);

const base = long[0]!.tokensPerSecond;
const rows = long.map(
  (r) => `| ${r.tokens} | ${r.lane} | ${(r.ms / 1000).toFixed(1)} | ${r.tokensPerSecond.toFixed(0)} | ${(r.tokensPerSecond / base).toFixed(2)} |`,
);
replaceSection(
  path.join(root, 'bench', 'RESULTS.md'),
  'Long inputs (`npm run bench:long`)',
  [
    `Run ${result.date.slice(0, 16).replace('T', ' ')} UTC with \`npm run bench:long\` on ${result.model}, ${result.cores} cores; the engine with the default long lane (${facts.longSequences} × ${facts.longContextSize} tokens) against the same engine without it (\`--long-ctx-size 0\`), in one process, one after the other.`,
    '',
    '| | without long lane | with long lane | ratio |',
    '|---|---|---|---|',
    `| load time, s | ${(without.loadMs / 1000).toFixed(1)} | ${(lane.loadMs / 1000).toFixed(1)} | ${(lane.loadMs / without.loadMs).toFixed(2)} |`,
    `| resident memory added by the load, MiB | ${without.rssMb.toFixed(0)} | ${lane.rssMb.toFixed(0)} | ${(lane.rssMb / without.rssMb).toFixed(2)} |`,
    `| one question on a 200-token state, median of ${repeats}, ms | ${withoutShort.toFixed(0)} | ${withShort.toFixed(0)} | ${(withShort / withoutShort).toFixed(2)} |`,
    '',
    `One question about a long state (uncached), with the default configuration; "ratio" is tokens/s against the ${long[0]!.tokens}-token row:`,
    '',
    '| state tokens | lane | seconds | tokens/s | ratio |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n'),
);
log('wrote bench/out/long.json and bench/RESULTS.md');
