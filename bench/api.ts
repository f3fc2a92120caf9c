// `npm run bench:api`: decisions per second and p50/p99 latency of POST /v1/systemone at
// concurrency 1, 8 and 32, against llama-server built from the same llama.cpp source, same model
// and threads, asked one prompt per question × pass (n_predict 1, n_probs) by the same load
// generator. Writes bench/out/api.json and the API section of bench/RESULTS.md.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLocalEngine, type LocalEngine } from '../src/engine/local.js';
import { packageRoot } from '../src/paths.js';
import { engineRequestFor } from './lib/capture.js';
import { ensureLlamaTool } from './lib/llama-bench.js';
import { startLlamaServer } from './lib/llama-server.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { replaceSection, writeRawResult } from './lib/results.js';
import { freePort } from './lib/serve.js';

const root = packageRoot();
const model = process.env.ARBITRA_MODEL ?? path.join(root, 'models', 'gemma-3-270m-q4_k_m.gguf');
const threads = Number(process.env.BENCH_THREADS) || os.availableParallelism();
const seconds = Number(process.env.BENCH_SECONDS) || 15;
const levels = (process.env.BENCH_CONCURRENCY ?? '1,8,32').split(',').map(Number);
const log = (msg: string): void => void process.stdout.write(`[bench:api] ${msg}\n`);

const TICKET =
  'Ticket #4471 from a customer in Lyon. "Hello, I ordered the blue winter jacket (size M) on the 3rd and paid with my credit card. ' +
  'The parcel arrived yesterday but the box was torn open, the jacket has a broken zip and there is a stain on the left sleeve. ' +
  'I had planned to wear it for a trip next week, so I am quite annoyed. I already tried to call your hotline twice and waited ' +
  'more than twenty minutes each time without reaching anyone. I would like either a replacement that arrives before Friday or ' +
  'my money back. Please also tell me whether I need to send the damaged jacket back and who pays for the return shipping. ' +
  'I have been a customer for six years and this is the first time something like this has happened. Regards, Camille."';

const WORKLOADS = {
  a: {
    name: '4 choice questions x 4 options, debias permute, 4 passes',
    body: {
      model: 'jev-latest',
      state: TICKET,
      questions: {
        intent: { type: 'choice', instructions: 'What does the customer want the company to do first, judging only from the message itself?', criteria: ['replacement', 'refund', 'repair', 'information'] },
        sentiment: { type: 'choice', instructions: 'Which word best describes the overall emotional tone of the customer message as written?', criteria: ['angry', 'annoyed', 'neutral', 'pleased'] },
        channel: { type: 'choice', instructions: 'Through which channel did the customer say they already tried to reach the company before writing?', criteria: ['email', 'phone', 'chat', 'store'] },
        priority: { type: 'choice', instructions: 'How urgently should the support team handle this ticket, given the deadline the customer mentions?', criteria: ['low', 'normal', 'high', 'critical'] },
      },
      options: { debias: 'permute', debias_passes: 4 },
    },
  },
  b: {
    name: 'one noul question',
    body: { model: 'jev-latest', state: TICKET, questions: { refund: { type: 'noul', instructions: 'Does the customer accept a refund?' } } },
  },
} as const;

// Every request carries its own state, as real traffic does: otherwise both servers would only
// measure their caches (llama-server's slots keep whole identical prompts).
const STATE_SLOT = '\u0001STATE\u0001';
let requestNumber = 0;
const nextState = (): string => `${TICKET} (reference ${++requestNumber})`;

/** The prompts our decision layer builds for a body, with STATE_SLOT where the state goes: what the baseline is asked, one per branch. */
async function promptsFor(body: object, engine: LocalEngine): Promise<{ prompts: string[]; candidates: number }> {
  const request = await engineRequestFor({ ...body, state: STATE_SLOT }, await engine.info());
  const framed = engine.framedText(request);
  return { prompts: framed.suffixes.map((suffix) => framed.prefix + suffix), candidates: request.branches[0]!.answers.length };
}

async function startArbitra(dataDir: string, port: number): Promise<{ key: string; stop: () => Promise<void>; command: string }> {
  const cli = path.join(root, 'dist', 'src', 'cli', 'main.js');
  const env = {
    ...process.env,
    ARBITRA_RATE_LIMIT_RPS: '1000000',
    ARBITRA_MAX_IN_FLIGHT: '100000',
    ARBITRA_FREE_DAILY_DECISIONS: '100000000',
    ARBITRA_MONTHLY_CAP: '100000000',
  };
  const key = execFileSync(process.execPath, [cli, 'keys', 'create', '--email', 'bench@example.com', '--data-dir', dataDir], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n')[0]!.trim();
  const args = [cli, 'serve', '--port', String(port), '--data-dir', dataDir, '--model', model, '--workers', '1', '--threads', String(threads)];
  // The start-up line goes to stderr, like every line the server logs.
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`arbitra serve exited with ${code}: ${out}`)));
  });
  return {
    key,
    command: ['node', ...args.map((a) => path.relative(root, a) || a)].join(' '),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

interface Row {
  workload: string;
  concurrency: number;
  ours: LoadResult;
  baseline: LoadResult;
  ratio: number;
}

async function main(): Promise<void> {
  const serverBinary = ensureLlamaTool(root, 'llama-server', log);

  log('building the prompts the baseline will be asked');
  const local = await createLocalEngine(model, { threads });
  const prompts = { a: await promptsFor(WORKLOADS.a.body, local), b: await promptsFor(WORKLOADS.b.body, local) };
  await local.close();

  const rows: Row[] = [];
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-bench-'));
  const arbitraPort = await freePort();
  const arbitra = await startArbitra(dataDir, arbitraPort);
  const ours: Record<string, LoadResult[]> = { a: [], b: [] };
  try {
    for (const w of ['a', 'b'] as const) {
      const once = async (): Promise<boolean> => {
        const r = await fetch(`http://127.0.0.1:${arbitraPort}/v1/systemone`, {
          method: 'POST',
          headers: { authorization: `Bearer ${arbitra.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ ...WORKLOADS[w].body, state: nextState() }),
        });
        await r.arrayBuffer();
        return r.status === 200;
      };
      await runLoad(once, { concurrency: 2, seconds: 0, minPerClient: 2 });
      for (const c of levels) {
        const res = await runLoad(once, { concurrency: c, seconds, minPerClient: 1 });
        log(`arbitra  ${w} c=${c}: ${res.perSecond.toFixed(2)} decisions/s, p50 ${res.p50ms.toFixed(0)} ms, p99 ${res.p99ms.toFixed(0)} ms (${res.completed} ok, ${res.failed} failed)`);
        ours[w]!.push(res);
      }
    }
  } finally {
    await arbitra.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }

  // One slot per concurrent prompt up to 32 (llama-server's continuous batching), each with room for one prompt.
  const llamaPort = await freePort();
  const baseline = await startLlamaServer(serverBinary, { model, port: llamaPort, threads, parallel: 32, ctxPerSlot: 1024 });
  try {
    for (const w of ['a', 'b'] as const) {
      const { prompts: list, candidates } = prompts[w];
      const ask = async (prompt: string): Promise<boolean> => {
        const r = await fetch(`${baseline.url}/completion`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ prompt, n_predict: 1, n_probs: Math.max(candidates, 10), temperature: 0, cache_prompt: true }),
        });
        const j = (await r.json()) as { completion_probabilities?: unknown[] };
        return r.ok && Array.isArray(j.completion_probabilities);
      };
      // A decision is all of its question × pass prompts, sent together as a client would.
      const once = async (): Promise<boolean> => {
        const state = nextState();
        return (await Promise.all(list.map((p) => ask(p.replace(STATE_SLOT, state))))).every(Boolean);
      };
      await runLoad(once, { concurrency: 2, seconds: 0, minPerClient: 2 });
      for (const [i, c] of levels.entries()) {
        const res = await runLoad(once, { concurrency: c, seconds, minPerClient: 1 });
        log(`baseline ${w} c=${c}: ${res.perSecond.toFixed(2)} decisions/s, p50 ${res.p50ms.toFixed(0)} ms, p99 ${res.p99ms.toFixed(0)} ms (${res.completed} ok, ${res.failed} failed)`);
        const mine = ours[w]![i]!;
        rows.push({ workload: w, concurrency: c, ours: mine, baseline: res, ratio: mine.perSecond / res.perSecond });
      }
    }
  } finally {
    await baseline.stop();
  }

  const load = os.loadavg()[0]!.toFixed(2);
  const out = { date: new Date().toISOString(), cpus: os.availableParallelism(), threads, seconds, loadavg1: load, arbitra: arbitra.command, baseline: baseline.command, prompts: { a: prompts.a.prompts.length, b: prompts.b.prompts.length }, rows };
  writeRawResult('api', out);
  const fmt = (r: LoadResult): string => `${r.perSecond.toFixed(2)} | ${r.p50ms.toFixed(0)} | ${r.p99ms.toFixed(0)}`;
  const table = rows
    .map((r) => `| ${r.workload} | ${r.concurrency} | ${fmt(r.ours)} | ${fmt(r.baseline)} | **${r.ratio.toFixed(2)}×** |`)
    .join('\n');
  replaceSection(
    path.join(root, 'bench', 'RESULTS.md'),
    'API',
    `Command: \`npm run bench:api\` (${out.date}; ${out.cpus} cores, ${threads} engine threads, ${seconds} s per cell, 1-minute load average ${load} at the end).

- Every request has its own state (the ticket plus a reference number), so neither server answers from a cache of whole prompts; within a request ours shares the state prefix across questions and passes.
- (a) ${WORKLOADS.a.name}: ${prompts.a.prompts.length} prompts per decision for the baseline.
- (b) ${WORKLOADS.b.name}: ${prompts.b.prompts.length} prompt per decision.
- Ours: \`${out.arbitra}\` (rate limits raised for the run).
- Baseline: \`${path.relative(root, baseline.command.split(' ')[0]!)} ${baseline.command.split(' ').slice(1).join(' ').replace(model, path.relative(root, model))}\`, each prompt a \`/completion\` with \`n_predict: 1\`, \`n_probs\`, \`cache_prompt: true\`; a decision's prompts are sent together.

| workload | concurrency | ours decisions/s | p50 ms | p99 ms | llama-server decisions/s | p50 ms | p99 ms | ratio (decisions/s) |
|---|---|---|---|---|---|---|---|---|
${table}
`,
  );
  log('wrote bench/out/api.json and bench/RESULTS.md');
}

await main();
