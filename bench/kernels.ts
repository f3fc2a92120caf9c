// `npm run bench:kernels`: what the exact kernels cost against llama.cpp's stock ones where
// attention weighs most, one question about a long cold state. Both engines are loaded in one
// process and timed alternately at each size (exact, stock, exact, stock), so a drift of the
// machine falls on both. Writes bench/out/kernels-<model>.json and its section of bench/RESULTS.md.
import os from 'node:os';
import path from 'node:path';
import { LlamaEngine } from '../src/engine/llama-engine.js';
import { packageRoot } from '../src/paths.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { stateOf, timeOne } from './lib/long-state.js';

const root = packageRoot();
const model = process.env.ARBITRA_MODEL ?? path.join(root, 'models', 'gemma-3-270m-q4_k_m.gguf');
const sizes = (process.env.BENCH_KERNELS_TOKENS ?? '1000,4000,12000').split(',').map(Number);
const repeats = Number(process.env.BENCH_ITERATIONS) || 2;
const log = (msg: string): void => void process.stdout.write(`[bench:kernels] ${msg}\n`);

// One lane as long as the longest state, so every size is a cold prefix in the main lane.
const contextSize = Math.max(...sizes) + 1024;
const load = (kernels: 'exact' | 'fast') => LlamaEngine.load(model, { kernels, contextSize, longContextSize: 0, maxSequences: 4, prefixCacheTokens: 0 });
const engines = { exact: await load('exact'), fast: await load('fast') };

/** A size's runs, in seconds. */
const seconds = (runs: number[]): string => runs.map((ms) => (ms / 1000).toFixed(1)).join(', ');

const rows: { tokens: number; exactMs: number[]; fastMs: number[] }[] = [];
for (const tokens of sizes) {
  const row = { tokens, exactMs: [] as number[], fastMs: [] as number[] };
  for (let i = 0; i < repeats; i++) {
    row.exactMs.push(await timeOne(engines.exact, stateOf(engines.exact, tokens, `exact ${tokens} ${i}`)));
    row.fastMs.push(await timeOne(engines.fast, stateOf(engines.fast, tokens, `fast ${tokens} ${i}`)));
  }
  log(`${tokens} tokens: exact ${seconds(row.exactMs)} s; stock ${seconds(row.fastMs)} s`);
  rows.push(row);
}
await engines.exact.close();
await engines.fast.close();

const name = path.basename(model, '.gguf');
const result = { model: name, date: new Date().toISOString(), cores: os.availableParallelism(), repeats, rows };
writeRawResult(`kernels-${name}`, result);
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
replaceSection(
  path.join(root, 'bench', 'RESULTS.md'),
  `Exact kernels against stock on long states, ${name} (\`npm run bench:kernels\`)`,
  [
    `Run ${result.date.slice(0, 16).replace('T', ' ')} UTC with \`ARBITRA_MODEL=models/${name}.gguf npm run bench:kernels\` on ${result.cores} cores: one question about an uncached state, \`--kernels exact\` (the default) against \`--kernels fast\` (llama.cpp's stock CPU kernels), both engines in one process, timed alternately, ${repeats} run${repeats === 1 ? '' : 's'} of each per size.`,
    '',
    '| state tokens | exact, s | stock, s | exact ÷ stock |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.tokens} | ${seconds(r.exactMs)} | ${seconds(r.fastMs)} | ${(sum(r.exactMs) / sum(r.fastMs)).toFixed(2)} |`),
  ].join('\n'),
);
log(`wrote bench/out/kernels-${name}.json and bench/RESULTS.md`);
