// `npm run bench:starve`: a key's requests about new states while the same key keeps asking about a
// cached one, the load under which they once waited forever. `arbitra serve --workers 2` on the
// default model (--model for another): new-state requests (a yes/no and a 3-option choice, or the
// yes/no alone) are timed one at a time, alone, then beside three clients resending one cached
// one-question body without pause, of the same key and of another key. The goal: beside the
// stream, at most twice the time alone plus one step (the engine's mean decode while the stream
// runs, from its own counters: the decode a newcomer may find in progress). Writes
// bench/out/starve.json and the "Starvation" section of bench/RESULTS.md.
import os from 'node:os';
import { distinctBody, IDENTICAL } from './lib/chaos.js';
import { call, outcome } from './lib/http.js';
import { metricTotal } from './lib/metrics.js';
import { benchArgs, numberOption } from './lib/options.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve, type Served } from './lib/serve.js';
import { latencySummary, ms } from './lib/stats.js';

const { values, common } = benchArgs({
  /** New-state requests timed per case. */
  requests: { type: 'string' },
});
const requests = numberOption(values.requests, 'requests', 6);
const TIMEOUT_MS = 300_000;
const log = (msg: string): void => void process.stdout.write(`[bench:starve] ${msg}\n`);

const ask = (server: Served, key: string, body: object) =>
  call(`${server.url}/v1/systemone`, { headers: { authorization: `Bearer ${key}` }, body, timeoutMs: TIMEOUT_MS, fresh: true });

/** Milliseconds of `n` requests sent one after another; a failure is an error, naming its outcome. */
async function timed(server: Served, key: string, n: number, body: () => object): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await ask(server, key, body());
    if (r.status !== 200) throw new Error(`a request answered ${outcome(r)}: ${r.text.slice(0, 300)}`);
    times.push(r.ms);
  }
  return times;
}

/** The engine's decodes so far and the seconds they took. */
async function decodeCounters(server: Served): Promise<{ decodes: number; seconds: number }> {
  const text = (await call(`${server.url}/metrics`, { timeoutMs: 10_000 })).text;
  return { decodes: metricTotal(text, 'arbitra_engine_decodes_total') ?? NaN, seconds: metricTotal(text, 'arbitra_engine_decode_seconds_total') ?? NaN };
}

/**
 * Runs `during` while three clients of `key` resend the cached body: how many they got answered,
 * and the engine's mean decode meanwhile.
 */
async function besideStream<T>(server: Served, key: string, during: () => Promise<T>): Promise<{ value: T; answered: number; stepMs: number }> {
  let running = true;
  let answered = 0;
  const clients = [0, 1, 2].map(async () => {
    while (running) {
      if ((await ask(server, key, IDENTICAL)).status === 200) answered++;
    }
  });
  try {
    const before = await decodeCounters(server);
    const value = await during();
    const after = await decodeCounters(server);
    return { value, answered, stepMs: ((after.seconds - before.seconds) * 1000) / (after.decodes - before.decodes) };
  } finally {
    running = false;
    await Promise.all(clients);
  }
}

const oneQuestion = (): object => {
  const body = distinctBody() as { state: string; questions: Record<string, unknown> };
  return { state: body.state, questions: { refund: body.questions.refund } };
};

async function main(): Promise<void> {
  const server = await serve({ model: common.model, workers: 2 });
  log(`serving on ${server.url}; ${requests} requests per case`);
  try {
    const load = await server.createKey('starve-load@example.com', 'load');
    const other = await server.createKey('starve-other@example.com', 'other');
    // Warm: the first decisions on a fresh engine page the weights in.
    await timed(server, load.key, 2, distinctBody);
    await timed(server, load.key, 1, () => IDENTICAL);
    const cases = [];
    for (const [shape, body] of [
      ['a yes/no and a 3-option choice', distinctBody],
      ['one yes/no', oneQuestion],
    ] as const) {
      const alone = latencySummary(await timed(server, load.key, requests, body));
      for (const [streamKey, whose] of [
        [load.key, 'the same key'],
        [other.key, 'another key'],
      ] as const) {
        const { value, answered, stepMs } = await besideStream(server, streamKey, () => timed(server, load.key, requests, body));
        const beside = latencySummary(value);
        const bound = 2 * alone.p50 + stepMs;
        log(
          `${shape}, stream of ${whose}: alone p50 ${ms(alone.p50)} ms, beside p50 ${ms(beside.p50)} max ${ms(beside.max)} ms (bound ${ms(bound)} with a ${ms(stepMs)} ms step), ${answered} cached answered meanwhile`,
        );
        cases.push({ shape, whose, alone, beside, stepMs, bound, answered, met: beside.max <= bound });
      }
    }
    const result = { date: new Date().toISOString(), cpus: os.availableParallelism(), command: server.command, requests, cases };
    writeRawResult('starve', result);
    publishSection(
      common.resultsFile,
      `Starvation (\`npm run bench:starve\`, ${common.model.split('/').pop()})`,
      [
        `Command: \`npm run bench:starve${values.model ? ` -- --model ${values.model}` : ''}\` (${result.date.slice(0, 16).replace('T', ' ')} UTC; ${result.cpus} cores). Server: \`${result.command}\`.`,
        '',
        `New-state requests of one key, ${requests} one after another per case, alone and then beside three clients resending one cached one-question body without pause, of the same key or of another. One step: the engine's mean decode while the stream ran (\`arbitra_engine_decode_seconds_total\` over \`arbitra_engine_decodes_total\`), the decode a newcomer may find in progress. Goal: every request beside the stream within twice the p50 alone plus one step. Before the scheduler fix, the same key's two-question requests got no answer at all (bench/RESULTS.md, "No request waits forever").`,
        '',
        '| request | stream of | alone p50 ms | beside p50 ms | beside max ms | max ÷ alone p50 | step ms | bound ms | met | cached answered meanwhile |',
        '|---|---|---|---|---|---|---|---|---|---|',
        ...cases.map(
          (c) =>
            `| ${c.shape} | ${c.whose} | ${ms(c.alone.p50)} | ${ms(c.beside.p50)} | ${ms(c.beside.max)} | ${(c.beside.max / c.alone.p50).toFixed(2)} | ${ms(c.stepMs)} | ${ms(c.bound)} | ${c.met ? 'yes' : 'no'} | ${c.answered} |`,
        ),
      ].join('\n'),
      log,
    );
  } finally {
    await server.stop();
  }
}

await main();
