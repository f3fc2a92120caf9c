// `npm run bench:fair`: does one huge request starve everyone else? Small requests (1 yes/no
// question, short state, one key) are sent at a steady rate, first alone, then while one request
// of 2,000 questions from another key runs, in the same run against the same server; the figures
// are the latency ratios between the two. Then a second huge request is sent and its client
// disconnects halfway: the bench reports whether the engine stopped working on it (how soon it
// was idle, the branches it still scored, arbitra_engine_jobs_cancelled_total when exported).
// Writes bench/out/fair.json and the "Fairness" section of bench/RESULTS.md.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { decisionBody } from './lib/bodies.js';
import { call, json, outcome, type Reply } from './lib/http.js';
import { metricTotal } from './lib/metrics.js';
import { benchArgs, numberOption } from './lib/options.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve, serverNotes, type Served } from './lib/serve.js';
import { latencySummary, ms, type LatencySummary } from './lib/stats.js';

const { values, common } = benchArgs({
  questions: { type: 'string' },
  /** Small requests per second: well under what the server answers alone, so the baseline is not a queue. */
  rate: { type: 'string' },
  /** Seconds of small requests alone. */
  seconds: { type: 'string' },
  /** The most a large request may take before the bench gives up on it. */
  'max-seconds': { type: 'string' },
});
const questions = numberOption(values.questions, 'questions', 2000);
const rate = numberOption(values.rate, 'rate', 1);
const aloneSeconds = numberOption(values.seconds, 'seconds', 30);
const maxSeconds = numberOption(values['max-seconds'], 'max-seconds', 1800);
const METRICS_POLL_MS = 250;
const log = (msg: string): void => void process.stdout.write(`[bench:fair] ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let ref = 0;
const decide = (server: Served, key: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Reply> =>
  call(`${server.url}/v1/systemone`, { headers: { authorization: `Bearer ${key}` }, body, timeoutMs: maxSeconds * 1000, signal });
const small = (server: Served, key: string): Promise<Reply> => decide(server, key, decisionBody('small', ++ref));
const large = (server: Served, key: string, signal?: AbortSignal): Promise<Reply> => decide(server, key, decisionBody('large', ++ref, questions), signal);

/** Small requests at `rate` per second, each sent on time whatever the earlier ones are doing, until `until` settles. */
async function steady(server: Served, key: string, until: Promise<unknown>): Promise<Reply[]> {
  let done = false;
  void until.finally(() => (done = true));
  const sent: Promise<Reply>[] = [];
  const start = performance.now();
  for (let i = 0; !done; i++) {
    sent.push(small(server, key));
    await Promise.race([sleep(Math.max(0, start + ((i + 1) * 1000) / rate - performance.now())), until]);
  }
  return Promise.all(sent);
}

interface Stream {
  sent: number;
  statuses: Record<string, number>;
  latency: LatencySummary;
}

function stream(replies: Reply[]): Stream {
  const statuses: Record<string, number> = {};
  for (const r of replies) statuses[outcome(r)] = (statuses[outcome(r)] ?? 0) + 1;
  return { sent: replies.length, statuses, latency: latencySummary(replies.filter((r) => r.status === 200).map((r) => r.ms)) };
}

async function engineCounters(server: Served): Promise<{ queue: number | null; branches: number | null; cancelled: number | null }> {
  const text = (await call(`${server.url}/metrics`, { timeoutMs: 10_000 })).text;
  return {
    queue: metricTotal(text, 'arbitra_engine_queue_depth'),
    branches: metricTotal(text, 'arbitra_engine_branches_scored_total'),
    cancelled: metricTotal(text, 'arbitra_engine_jobs_cancelled_total'),
  };
}

/**
 * Sends a large request and disconnects once the engine has scored half of its branches (by the
 * branch counter, so "midway" holds however fast the machine is; after `fallbackMs` where the
 * counter is not exported), sends one small request, and watches the engine's queue until it is
 * empty or `limitMs` passed: a cancelled job leaves at once, an orphaned one keeps the engine
 * busy for the rest of its run. Nothing else is sent meanwhile, so the counters are this request's.
 */
async function cancellation(server: Served, largeKey: string, smallKey: string, fallbackMs: number, limitMs: number) {
  const before = await engineCounters(server);
  const abort = new AbortController();
  let finished = false;
  const sentAt = performance.now();
  const orphan = large(server, largeKey, abort.signal).finally(() => (finished = true));
  let atAbort = before;
  for (let midway = false; !midway && !finished && performance.now() - sentAt < limitMs; ) {
    await sleep(METRICS_POLL_MS);
    atAbort = await engineCounters(server);
    midway = atAbort.branches === null || before.branches === null ? performance.now() - sentAt >= fallbackMs : atAbort.branches - before.branches >= questions / 2;
  }
  abort.abort();
  const abortedAt = performance.now();
  const reply = await orphan;
  const next = small(server, smallKey);
  let idleAfterMs: number | null = null;
  let after = atAbort;
  while (performance.now() - abortedAt < limitMs) {
    after = await engineCounters(server);
    if (after.queue === 0) {
      idleAfterMs = performance.now() - abortedAt;
      break;
    }
    await sleep(METRICS_POLL_MS);
  }
  const nextReply = await next;
  after = await engineCounters(server);
  const delta = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);
  return {
    disconnectAfterS: (abortedAt - sentAt) / 1000,
    clientSaw: outcome(reply),
    idleAfterS: idleAfterMs === null ? null : idleAfterMs / 1000,
    limitS: limitMs / 1000,
    branchesBeforeDisconnect: delta(before.branches, atAbort.branches),
    branchesAfterDisconnect: delta(atAbort.branches, after.branches),
    jobsCancelled: delta(before.cancelled, after.cancelled),
    smallAfterDisconnect: { outcome: outcome(nextReply), ms: nextReply.ms },
  };
}

async function main(): Promise<void> {
  // No caps and no deadline: the point is one request far larger than the defaults allow. Small
  // requests stuck behind it pile up, so the per-key in-flight limit must not turn them into 429s.
  const server = await serve({
    model: common.model,
    workers: 2,
    env: { ARBITRA_MAX_QUESTIONS: '0', ARBITRA_MAX_BRANCHES: '0', ARBITRA_REQUEST_DEADLINE_SECONDS: '0', ARBITRA_MAX_IN_FLIGHT: '100000' },
  });
  log(`serving on ${server.url}; ${rate} small requests/s, ${questions} questions in the large one`);
  try {
    const smallKey = (await server.createKey('fair-small@example.com', 'small')).key;
    const largeKey = (await server.createKey('fair-large@example.com', 'large')).key;
    for (let i = 0; i < 3; i++) await small(server, smallKey);

    const alone = stream(await steady(server, smallKey, sleep(aloneSeconds * 1000)));
    log(`alone: ${alone.sent} sent, p50 ${alone.latency.p50.toFixed(0)} ms, p99 ${alone.latency.p99.toFixed(0)} ms`);

    const big = large(server, largeKey);
    const withLarge = stream(await steady(server, smallKey, big));
    const bigReply = await big;
    const answers = Object.keys(json(bigReply)?.answers ?? {}).length;
    const bigError = bigReply.status === 200 ? null : (json(bigReply)?.detail?.message ?? bigReply.error ?? bigReply.text.slice(0, 200));
    log(`with large: ${withLarge.sent} sent, p50 ${withLarge.latency.p50.toFixed(0)} ms, p99 ${withLarge.latency.p99.toFixed(0)} ms; large ${outcome(bigReply)} in ${(bigReply.ms / 1000).toFixed(1)} s, ${answers} answers${bigError ? ` (${bigError})` : ''}`);

    const cancel = await cancellation(server, largeKey, smallKey, Math.max(1000, bigReply.ms / 2), Math.max(10_000, bigReply.ms));
    log(`cancel: idle ${cancel.idleAfterS ?? 'never'} s after the disconnect, ${cancel.branchesAfterDisconnect} branches scored after it, jobs cancelled ${cancel.jobsCancelled ?? 'not exported'}`);

    const serverLog = serverNotes(server, log);

    const result: FairResult = { date: new Date().toISOString(), cpus: os.availableParallelism(), loadavg1: os.loadavg()[0] ?? NaN, command: server.command, questions, rate, aloneSeconds, alone, withLarge, large: { outcome: outcome(bigReply), seconds: bigReply.ms / 1000, answers, error: bigError }, cancel, serverLog };
    writeRawResult('fair', result);
    publishSection(common.resultsFile, 'Fairness (`npm run bench:fair`)', report(result), log);
  } finally {
    await server.stop();
  }
}

const statusList = (s: Record<string, number>): string => Object.entries(s).map(([k, n]) => `${k} × ${n}`).join(', ');

interface FairResult {
  date: string;
  cpus: number;
  loadavg1: number;
  command: string;
  questions: number;
  rate: number;
  aloneSeconds: number;
  alone: Stream;
  withLarge: Stream;
  large: { outcome: string; seconds: number; answers: number; error: string | null };
  cancel: Awaited<ReturnType<typeof cancellation>>;
  serverLog: string[];
}

/**
 * Cancelled: the client really left midway (no answer), the engine then scored fewer than half of
 * the branches left (an orphaned job scores all of them; a cancelled one only finishes the batch
 * already decoding, at most one branch per sequence), its queue emptied, and the cancellation
 * counter rose where the server exports it.
 */
function wasCancelled(c: FairResult['cancel'], questions: number): boolean {
  const left = questions - (c.branchesBeforeDisconnect ?? 0);
  return c.clientSaw === 'aborted' && c.idleAfterS !== null && c.branchesAfterDisconnect !== null && c.branchesAfterDisconnect < left / 2 && (c.jobsCancelled === null || c.jobsCancelled > 0);
}

function report(r: FairResult): string {
  const c = r.cancel;
  const row = (name: string, s: Stream): string => `| ${name} | ${s.sent} | ${statusList(s.statuses)} | ${ms(s.latency.p50)} | ${ms(s.latency.p99)} | ${ms(s.latency.max)} |`;
  return [
    `Command: \`npm run bench:fair -- --questions ${r.questions}\` (${r.date.slice(0, 16).replace('T', ' ')} UTC; ${r.cpus} cores, 1-minute load average ${r.loadavg1?.toFixed(2)} at the end). Server: \`${r.command}\`.`,
    '',
    `Small requests (1 yes/no question on a one-line state, one key) at ${r.rate} per second, each sent on schedule whatever the earlier ones are doing: for ${r.aloneSeconds} s alone, then for as long as one request of ${r.questions} yes/no questions on a ticket, from another key, runs. Latency over 200 answers.`,
    '',
    '| small requests | sent | answers | p50 ms | p99 ms | max ms |',
    '|---|---|---|---|---|---|',
    row('alone', r.alone),
    row('while the large request runs', r.withLarge),
    `| **ratio (with large / alone)** | | | **${(r.withLarge.latency.p50 / r.alone.latency.p50).toFixed(2)}×** | **${(r.withLarge.latency.p99 / r.alone.latency.p99).toFixed(2)}×** | |`,
    '',
    `The large request: ${r.large.outcome} after ${r.large.seconds.toFixed(1)} s with ${r.large.answers} answers${r.large.error ? ` ("${r.large.error}")` : ''}.`,
    '',
    `Client disconnect: the same large request again, its connection closed once the engine had scored half of its branches, after ${c.disconnectAfterS.toFixed(1)} s (the client saw ${c.clientSaw}). The engine's queue was ${c.idleAfterS === null ? `still busy ${c.limitS.toFixed(0)} s later` : `empty ${c.idleAfterS.toFixed(1)} s later`}; it scored ${c.branchesBeforeDisconnect ?? '?'} branches before the disconnect and ${c.branchesAfterDisconnect ?? '?'} after it; \`arbitra_engine_jobs_cancelled_total\` ${c.jobsCancelled === null ? 'is not exported' : `rose by ${c.jobsCancelled}`}. A small request sent just after the disconnect: ${c.smallAfterDisconnect.outcome} in ${ms(c.smallAfterDisconnect.ms)} ms. **${wasCancelled(c, r.questions) ? 'Cancelled' : 'Not cancelled'}** (cancelled means: no answer reached the client, the engine scored fewer than half of the branches left, its queue emptied, and the counter rose where exported).`,
  ].join('\n');
}

await main();
