// `npm run bench:kernels`: what the exact kernels cost against llama.cpp's stock ones where
// attention weighs most: one question about a long cold state, then 16 other questions about it
// once it is cached (only the questions decode, each over the whole state). Both engines are loaded in one
// process and timed alternately at each size (exact, stock, exact, stock), so a drift of the
// machine falls on both. Writes bench/out/kernels-<model>.json and its section of bench/RESULTS.md.
import os from 'node:os';
import path from 'node:path';
import { LlamaEngine } from '../src/engine/llama-engine.js';
import { packageRoot } from '../src/paths.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { stateOf, timeOne, timeQuestions } from './lib/long-state.js';
import { pathReport, servedPath } from '../src/engine/exact-path.js';

const root = packageRoot();
const model = process.env.ARBITRA_MODEL ?? path.join(root, 'models', 'gemma-3-270m-q4_k_m.gguf');
const sizes = (process.env.BENCH_KERNELS_TOKENS ?? '1000,4000,12000').split(',').map(Number);
const repeats = Number(process.env.BENCH_ITERATIONS) || 2;
const log = (msg: string): void => void process.stdout.write(`[bench:kernels] ${msg}\n`);

const QUESTIONS = 16;
// One lane as long as the longest state and its questions, so every size is a cold prefix in the
// main lane; the cache keeps one state for its questions (each state has its own salt).
const longest = Math.max(...sizes);
const contextSize = longest + 2048;
const load = (kernels: 'exact' | 'fast') =>
  LlamaEngine.load(model, { kernels, contextSize, longContextSize: 0, maxSequences: QUESTIONS + 2, prefixCacheTokens: longest });
const engines = { exact: await load('exact'), fast: await load('fast') };
for (const engine of Object.values(engines)) pathReport(servedPath(engine.facts)).forEach((line) => log(line));

/** A size's runs, in seconds. */
const seconds = (runs: number[]): string => runs.map((ms) => (ms / 1000).toFixed(1)).join(', ');

const rows: { tokens: number; exactMs: number[]; fastMs: number[]; exactCachedMs: number[]; fastCachedMs: number[] }[] = [];
for (const tokens of sizes) {
  const row = { tokens, exactMs: [] as number[], fastMs: [] as number[], exactCachedMs: [] as number[], fastCachedMs: [] as number[] };
  for (let i = 0; i < repeats; i++) {
    for (const kernels of ['exact', 'fast'] as const) {
      const state = stateOf(engines[kernels], tokens, `${kernels} ${tokens} ${i}`);
      row[`${kernels}Ms`].push(await timeOne(engines[kernels], state));
      row[`${kernels}CachedMs`].push(await timeQuestions(engines[kernels], state, QUESTIONS));
    }
  }
  log(
    `${tokens} tokens: exact ${seconds(row.exactMs)} s, then ${seconds(row.exactCachedMs)} s; stock ${seconds(row.fastMs)} s, then ${seconds(row.fastCachedMs)} s`,
  );
  rows.push(row);
}
await engines.exact.close();
await engines.fast.close();

const name = path.basename(model, '.gguf');
const result = { model: name, date: new Date().toISOString(), cores: os.availableParallelism(), repeats, questions: QUESTIONS, rows };
writeRawResult(`kernels-${name}`, result);
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
replaceSection(
  path.join(root, 'bench', 'RESULTS.md'),
  `Exact kernels against stock on long states, ${name} (\`npm run bench:kernels\`)`,
  [
    `Run ${result.date.slice(0, 16).replace('T', ' ')} UTC with \`ARBITRA_MODEL=models/${name}.gguf npm run bench:kernels\` on ${result.cores} cores: one question about an uncached state ("cold"), then ${QUESTIONS} other questions about the same state, cached, in one request ("${QUESTIONS} cached"); \`--kernels exact\` (the default) against \`--kernels fast\` (llama.cpp's stock CPU kernels), both engines in one process, timed alternately, ${repeats} run${repeats === 1 ? '' : 's'} of each per size.`,
    '',
    `| state tokens | exact cold, s | stock cold, s | exact ÷ stock | exact ${QUESTIONS} cached, s | stock ${QUESTIONS} cached, s | exact ÷ stock |`,
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.tokens} | ${seconds(r.exactMs)} | ${seconds(r.fastMs)} | ${(sum(r.exactMs) / sum(r.fastMs)).toFixed(2)} | ${seconds(r.exactCachedMs)} | ${seconds(r.fastCachedMs)} | ${(sum(r.exactCachedMs) / sum(r.fastCachedMs)).toFixed(2)} |`,
    ),
  ].join('\n'),
);
log(`wrote bench/out/kernels-${name}.json and bench/RESULTS.md`);
