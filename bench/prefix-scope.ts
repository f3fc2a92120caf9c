// `npm run bench:prefix-scope`: what the prefix cache tells one account about another's state. One
// server (default model, 2 HTTP workers, self-test off so that nothing else runs); per round a state
// of about 300 words that nobody sent before: key A's decision about it (cold), A's repeat, the same
// state from key B of another account, then from A's second key, one request at a time, each with
// the tokens the engine ran through the model for it (`arbitra_engine_tokens_evaluated_total`).
// With --compare-global, a server with `--prefix-cache-scope global` is measured the same way after
// the first one has stopped. Sends nothing the server of an older commit would refuse, so the same
// file measures the code before the scope existed. Writes bench/out/prefix-scope.json and the
// "Prefix cache scope" section of bench/RESULTS.md.
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { packageRoot } from '../src/paths.js';
import { call, outcome } from './lib/http.js';
import { metricTotal } from './lib/metrics.js';
import { benchArgs, numberOption } from './lib/options.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve, type Served } from './lib/serve.js';
import { median, ms } from './lib/stats.js';

const { values, common } = benchArgs({
  /** States per server, each sent four times. */
  rounds: { type: 'string' },
  /** A second server with --prefix-cache-scope global, measured after the first. */
  'compare-global': { type: 'boolean', default: false },
});
const rounds = numberOption(values.rounds, 'rounds', 3);
const log = (msg: string): void => void process.stdout.write(`[bench:prefix-scope] ${msg}\n`);
// The primary shares one stats call per engine among the scrapes of 250 ms (src/metrics/engine.ts).
const STATS_SHARED_MS = 300;
const REQUEST_TIMEOUT_MS = 600_000;

/** About 300 words; the reference comes first, so no state shares more than the frame's head with another round's. */
function stateOf(reference: number): string {
  const lines = Array.from(
    { length: 16 },
    (_, i) => `Entry ${i + 1} of the private ledger: paid invoice ${4200 + i * 17} for the warehouse lease in Ghent, approved by the finance lead.`,
  );
  return `Ledger ${reference}, ${Date.now()}.\n${lines.join('\n')}`;
}

const STEPS = ['A cold', 'A repeat', 'B, other account', "A's second key"] as const;
type Step = (typeof STEPS)[number];

interface Sample {
  ms: number;
  /** Tokens the engine ran through the model for this request. */
  tokens: number;
}

async function tokensEvaluated(server: Served): Promise<number> {
  await sleep(STATS_SHARED_MS);
  const r = await call(`${server.url}/metrics`, { timeoutMs: 30_000 });
  const total = metricTotal(r.text, 'arbitra_engine_tokens_evaluated_total');
  if (total === null) throw new Error(`/metrics has no arbitra_engine_tokens_evaluated_total (${outcome(r)})`);
  return total;
}

async function decision(server: Served, key: string, state: string): Promise<Sample> {
  const before = await tokensEvaluated(server);
  const body = { state, questions: { lease: { instructions: 'Does the ledger mention a lease?' } } };
  const r = await call(`${server.url}/v1/systemone`, { headers: { authorization: `Bearer ${key}` }, body, timeoutMs: REQUEST_TIMEOUT_MS });
  if (r.status !== 200) throw new Error(`a decision answered ${outcome(r)}`);
  return { ms: r.ms, tokens: (await tokensEvaluated(server)) - before };
}

interface Side {
  name: string;
  command: string;
  samples: Record<Step, Sample[]>;
}

async function side(name: string, args: string[]): Promise<Side> {
  log(`starting ${name} (${common.model})`);
  const server = await serve({ model: common.model, workers: 2, args, env: { ARBITRA_SELF_TEST: 'off' } });
  const samples = Object.fromEntries(STEPS.map((s) => [s, [] as Sample[]])) as Record<Step, Sample[]>;
  try {
    const a1 = (await server.createKey('alice@example.com', 'first')).key;
    const a2 = (await server.createKey('alice@example.com', 'second')).key;
    const b = (await server.createKey('mallory@example.com', 'other')).key;
    for (let round = 1; round <= rounds; round++) {
      const state = stateOf(round);
      const order: [Step, string][] = [
        ['A cold', a1],
        ['A repeat', a1],
        ['B, other account', b],
        ["A's second key", a2],
      ];
      for (const [step, key] of order) {
        const sample = await decision(server, key, state);
        samples[step].push(sample);
        log(`${name}, round ${round}: ${step} ${ms(sample.ms)} ms, ${sample.tokens} tokens run`);
      }
    }
  } finally {
    await server.stop();
  }
  return { name, command: server.command, samples };
}

async function main(): Promise<void> {
  const configs: [string, string[]][] = [['default', []]];
  if (values['compare-global']) configs.push(['--prefix-cache-scope global', ['--prefix-cache-scope', 'global']]);
  const sides: Side[] = [];
  for (const [name, args] of configs) sides.push(await side(name, args));
  const out = { date: new Date().toISOString(), cpus: os.availableParallelism(), model: path.relative(packageRoot(), common.model), rounds, sides };
  writeRawResult('prefix-scope', out);
  const row = (s: Side): string =>
    `| ${s.name} | ${STEPS.map((step) => `${ms(median(s.samples[step].map((x) => x.ms)))} (${median(s.samples[step].map((x) => x.tokens))})`).join(' | ')} |`;
  const command = `npm run bench:prefix-scope --${values.rounds ? ` --rounds ${rounds}` : ''}${values['compare-global'] ? ' --compare-global' : ''}`;
  publishSection(
    common.resultsFile,
    'Prefix cache scope',
    `Command: \`${command}\` (${out.date}; ${out.cpus} cores; model ${out.model}). Per round a state of about 300 words nobody sent before, one yes/no question, one request at a time: key A's decision (cold), A's repeat, the same state from key B of another account, then from A's second key. Median over ${rounds} rounds of each request's milliseconds, and in brackets the tokens the engine ran through the model for it (\`arbitra_engine_tokens_evaluated_total\`).
${sides.map((s) => `\n- ${s.name}: \`${s.command}\``).join('')}

| server | ${STEPS.join(' ms (tokens) | ')} ms (tokens) |
|---|---|---|---|---|
${sides.map(row).join('\n')}
`,
    log,
  );
}

await main();
