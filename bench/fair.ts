// `npm run bench:fair`: does the largest request the server admits starve everyone else, and does
// it finish? On the default model unless --model says otherwise. Small requests (1 yes/no question,
// one key) are sent at a steady rate, cold (a new state each time) and warm (one state asked again),
// first alone, then while the largest admitted request from another key runs: 8-option choice
// questions × 8 permute passes, as many as admission by cost lets in (the interface's largest, 100
// of them, is sent first; its refusal says how many branches fit). The figures are the latency
// ratios between the two, the large request's own time against the deadline, and every refusal.
// Then the large request is sent again and its client disconnects halfway: the bench reports
// whether the engine stopped working on it.
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
  /** Small requests per second (cold and warm together): well under what the server answers alone. */
  rate: { type: 'string' },
  /** Seconds of small requests alone. */
  seconds: { type: 'string' },
  /** ARBITRA_REQUEST_DEADLINE_SECONDS of the server; the largest admitted request grows with it. */
  deadline: { type: 'string' },
});
const rate = numberOption(values.rate, 'rate', 0.25);
const aloneSeconds = numberOption(values.seconds, 'seconds', 60);
const deadline = numberOption(values.deadline, 'deadline', 600);
const METRICS_POLL_MS = 250;
const log = (msg: string): void => void process.stdout.write(`[bench:fair] ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The interface's largest choice request: 100 questions of 8 options, 8 permute passes. */
const PASSES = 8;
const OPTIONS = ['refund', 'repair', 'replacement', 'apology', 'discount', 'callback', 'escalation', 'nothing'];
function largeBody(questions: number, ref: number): Record<string, unknown> {
  const body = decisionBody('large', ref, questions) as { state: string; questions: Record<string, { instructions: string }> };
  const asChoice = Object.fromEntries(
    Object.entries(body.questions).map(([name, q]) => [
      name,
      { type: 'choice', instructions: `${q.instructions} If so, what should support offer?`, criteria: OPTIONS },
    ]),
  );
  return { state: body.state, questions: asChoice, options: { debias: 'permute', debias_passes: PASSES } };
}

let ref = 0;
const decide = (server: Served, key: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Reply> =>
  call(`${server.url}/v1/systemone`, { headers: { authorization: `Bearer ${key}` }, body, timeoutMs: (deadline + 60) * 1000, signal, fresh: true });
/** Cold: a state never asked before; warm: the same state every time (its prefix is cached). */
const small = (server: Served, key: string, warm: boolean): Promise<Reply> => decide(server, key, decisionBody('small', warm ? 0 : ++ref));
/** Small requests at `rate` per second, cold and warm in turn, each sent on time whatever the earlier ones are doing, until `until` settles. */
async function steady(server: Served, key: string, until: Promise<unknown>): Promise<{ cold: Reply[]; warm: Reply[] }> {
  let done = false;
  void until.finally(() => (done = true));
  const sent: { warm: boolean; reply: Promise<Reply> }[] = [];
  const start = performance.now();
  for (let i = 0; !done; i++) {
    const warm = i % 2 === 1;
    sent.push({ warm, reply: small(server, key, warm) });
    await Promise.race([sleep(Math.max(0, start + ((i + 1) * 1000) / rate - performance.now())), until]);
  }
  const replies = await Promise.all(sent.map((s) => s.reply));
  return { cold: replies.filter((_, i) => !sent[i]!.warm), warm: replies.filter((_, i) => sent[i]!.warm) };
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

interface Counters {
  queue: number | null;
  branches: number | null;
  cancelled: number | null;
  decodes: number | null;
  decodeSeconds: number | null;
}

async function engineCounters(server: Served): Promise<Counters> {
  const text = (await call(`${server.url}/metrics`, { timeoutMs: 10_000 })).text;
  const total = (name: string): number | null => metricTotal(text, name);
  return {
    queue: total('arbitra_engine_queue_depth'),
    branches: total('arbitra_engine_branches_scored_total'),
    cancelled: total('arbitra_engine_jobs_cancelled_total'),
    decodes: total('arbitra_engine_decodes_total'),
    decodeSeconds: (total('arbitra_engine_decode_seconds_total') ?? 0) + (total('arbitra_engine_readout_seconds_total') ?? 0),
  };
}

const delta = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);

interface Attempt {
  questions: number;
  outcome: string;
  ms: number;
  /** The refusal's own words, when refused. */
  message: string | null;
  branchesThatFit: number | null;
}

/**
 * The largest request admission lets in: the interface's largest first, then what its refusal
 * says fits (whole questions of PASSES branches), a tenth less at each further refusal.
 */
async function largestAdmitted(server: Served, key: string): Promise<{ attempts: Attempt[]; reply: Reply; questions: number }> {
  const attempts: Attempt[] = [];
  let questions = 100;
  for (;;) {
    const reply = await decide(server, key, largeBody(questions, ++ref));
    const detail = json(reply)?.detail;
    const item = Array.isArray(detail) ? detail[0] : detail;
    const fit = typeof item?.ctx?.branches_that_fit === 'number' ? (item.ctx.branches_that_fit as number) : null;
    attempts.push({
      questions,
      outcome: outcome(reply),
      ms: reply.ms,
      message: reply.status === 200 ? null : String(item?.msg ?? item?.message ?? reply.error ?? ''),
      branchesThatFit: fit,
    });
    log(`large request of ${questions} questions: ${outcome(reply)} in ${(reply.ms / 1000).toFixed(1)} s${fit === null ? '' : ` (${fit} branches fit)`}`);
    if (reply.status !== 422 && reply.status !== 429) return { attempts, reply, questions };
    const next = fit !== null ? Math.min(questions - 1, Math.floor(fit / PASSES)) : Math.floor(questions * 0.9);
    if (next < 1) return { attempts, reply, questions };
    if (reply.status === 429) await sleep(1000 * (Number(json(reply)?.detail?.retry_after_seconds) || 1));
    questions = next;
  }
}

/**
 * Sends the large request again and disconnects once the engine has scored half of its branches,
 * sends one small request, and watches the engine's queue until it is empty or `limitMs` passed:
 * a cancelled job leaves at once, an orphaned one keeps the engine busy for the rest of its run.
 */
async function cancellation(server: Served, largeKey: string, smallKey: string, questions: number, limitMs: number) {
  const before = await engineCounters(server);
  const abort = new AbortController();
  let finished = false;
  const sentAt = performance.now();
  const orphan = decide(server, largeKey, largeBody(questions, ++ref), abort.signal).finally(() => (finished = true));
  const branches = questions * PASSES;
  let atAbort = before;
  for (let midway = false; !midway && !finished && performance.now() - sentAt < limitMs; ) {
    await sleep(METRICS_POLL_MS);
    atAbort = await engineCounters(server);
    midway = (delta(before.branches, atAbort.branches) ?? 0) >= branches / 2;
  }
  abort.abort();
  const abortedAt = performance.now();
  const reply = await orphan;
  const next = small(server, smallKey, false);
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
  return {
    disconnectAfterS: (abortedAt - sentAt) / 1000,
    clientSaw: outcome(reply),
    idleAfterS: idleAfterMs === null ? null : idleAfterMs / 1000,
    limitS: limitMs / 1000,
    branches,
    branchesBeforeDisconnect: delta(before.branches, atAbort.branches),
    branchesAfterDisconnect: delta(atAbort.branches, after.branches),
    jobsCancelled: delta(before.cancelled, after.cancelled),
    smallAfterDisconnect: { outcome: outcome(nextReply), ms: nextReply.ms },
  };
}

async function main(): Promise<void> {
  // The default limits but the deadline: the largest request is whatever admission lets in. The
  // small requests' key must not meet its in-flight limit while they wait.
  const server = await serve({ model: common.model, workers: 2, env: { ARBITRA_REQUEST_DEADLINE_SECONDS: String(deadline), ARBITRA_MAX_IN_FLIGHT: '100000' } });
  log(`serving on ${server.url}; ${rate} small requests/s, deadline ${deadline} s`);
  try {
    const smallKey = (await server.createKey('fair-small@example.com', 'small')).key;
    const largeKey = (await server.createKey('fair-large@example.com', 'large')).key;
    for (let i = 0; i < 3; i++) await small(server, smallKey, i > 0);

    const aloneReplies = await steady(server, smallKey, sleep(aloneSeconds * 1000));
    const alone = { cold: stream(aloneReplies.cold), warm: stream(aloneReplies.warm) };
    log(`alone: cold p50 ${ms(alone.cold.latency.p50)} ms, warm p50 ${ms(alone.warm.latency.p50)} ms`);

    const before = await engineCounters(server);
    let found: Awaited<ReturnType<typeof largestAdmitted>> | null = null;
    const big = largestAdmitted(server, largeKey).then((f) => (found = f));
    const besideReplies = await steady(server, smallKey, big);
    const after = await engineCounters(server);
    const { attempts, reply: bigReply, questions } = found!;
    const beside = { cold: stream(besideReplies.cold), warm: stream(besideReplies.warm) };
    const decodes = delta(before.decodes, after.decodes);
    const decodeMs = decodes ? ((delta(before.decodeSeconds, after.decodeSeconds) ?? NaN) * 1000) / decodes : NaN;
    const answers = Object.keys(json(bigReply)?.answers ?? {}).length;
    log(
      `beside it: cold p50 ${ms(beside.cold.latency.p50)} ms, warm p50 ${ms(beside.warm.latency.p50)} ms; large ${outcome(bigReply)} in ${(bigReply.ms / 1000).toFixed(1)} s; a decode took ${ms(decodeMs)} ms on average`,
    );

    const cancel = await cancellation(server, largeKey, smallKey, questions, Math.max(10_000, bigReply.ms));
    log(
      `cancel: idle ${cancel.idleAfterS ?? 'never'} s after the disconnect, ${cancel.branchesAfterDisconnect} branches scored after it, jobs cancelled ${cancel.jobsCancelled ?? 'not exported'}`,
    );

    const serverLog = serverNotes(server, log);
    const result: FairResult = {
      date: new Date().toISOString(),
      cpus: os.availableParallelism(),
      loadavg1: os.loadavg()[0] ?? NaN,
      command: server.command,
      model: common.model,
      deadline,
      rate,
      aloneSeconds,
      alone,
      beside,
      decodeMs,
      attempts,
      large: { questions, branches: questions * PASSES, outcome: outcome(bigReply), seconds: bigReply.ms / 1000, answers },
      cancel,
      serverLog,
    };
    writeRawResult('fair', result);
    publishSection(common.resultsFile, 'Fairness (`npm run bench:fair`)', report(result), log);
  } finally {
    await server.stop();
  }
}

const statusList = (s: Record<string, number>): string =>
  Object.entries(s)
    .map(([k, n]) => `${k} × ${n}`)
    .join(', ');

interface FairResult {
  date: string;
  cpus: number;
  loadavg1: number;
  command: string;
  model: string;
  deadline: number;
  rate: number;
  aloneSeconds: number;
  alone: { cold: Stream; warm: Stream };
  beside: { cold: Stream; warm: Stream };
  decodeMs: number;
  attempts: Attempt[];
  large: { questions: number; branches: number; outcome: string; seconds: number; answers: number };
  cancel: Awaited<ReturnType<typeof cancellation>>;
  serverLog: string[];
}

/**
 * Cancelled: the client really left midway (no answer), the engine then scored fewer than half of
 * the branches left (an orphaned job scores all of them), its queue emptied, and the cancellation
 * counter rose where the server exports it.
 */
function wasCancelled(c: FairResult['cancel']): boolean {
  const left = c.branches - (c.branchesBeforeDisconnect ?? 0);
  return (
    c.clientSaw === 'aborted' &&
    c.idleAfterS !== null &&
    c.branchesAfterDisconnect !== null &&
    c.branchesAfterDisconnect < left / 2 &&
    (c.jobsCancelled === null || c.jobsCancelled > 0)
  );
}

const met = (ok: boolean): string => (ok ? 'met' : '**missed**');

function report(r: FairResult): string {
  const c = r.cancel;
  const row = (name: string, s: Stream): string =>
    `| ${name} | ${s.sent} | ${statusList(s.statuses)} | ${ms(s.latency.p50)} | ${ms(s.latency.p99)} | ${ms(s.latency.max)} |`;
  const coldRatio = r.beside.cold.latency.p50 / r.alone.cold.latency.p50;
  const warmGoal = r.alone.warm.latency.p50 + r.decodeMs;
  const inTime = r.large.outcome === '200' && r.large.seconds <= r.deadline;
  const attempts = r.attempts.map(
    (a) => `${a.questions} questions (${a.questions * PASSES} branches): ${a.outcome} in ${ms(a.ms)} ms${a.message ? ` ("${a.message}")` : ''}`,
  );
  return [
    `Command: \`npm run bench:fair -- --deadline ${r.deadline}\` (${r.date.slice(0, 16).replace('T', ' ')} UTC; ${r.cpus} cores, 1-minute load average ${r.loadavg1?.toFixed(2)} at the end; model ${r.model.split('/').pop()}). Server: \`${r.command}\`, default limits but ARBITRA_REQUEST_DEADLINE_SECONDS=${r.deadline}.`,
    '',
    `Small requests (1 yes/no question, one key) at ${r.rate} per second, cold (a state never asked before) and warm (one state asked again) in turn, each sent on schedule whatever the earlier ones are doing: for ${r.aloneSeconds} s alone, then while the largest request admission lets in, from another key, runs: choice questions of 8 options × ${PASSES} permute passes.`,
    '',
    '| small requests | sent | answers | p50 ms | p99 ms | max ms |',
    '|---|---|---|---|---|---|',
    row('cold, alone', r.alone.cold),
    row('warm, alone', r.alone.warm),
    row('cold, beside the large request', r.beside.cold),
    row('warm, beside the large request', r.beside.warm),
    '',
    `The large request, found by admission: ${attempts.join('; ')}. The one admitted: ${r.large.questions} questions (${r.large.branches} branches), ${r.large.outcome} after ${r.large.seconds.toFixed(1)} s with ${r.large.answers} answers, against a deadline of ${r.deadline} s. A decode took ${ms(r.decodeMs)} ms on average while it ran.`,
    '',
    '| goal | figure | |',
    '|---|---|---|',
    `| every admitted request finishes inside the deadline | large ${r.large.seconds.toFixed(1)} s of ${r.deadline} s; small: ${statusList(r.beside.cold.statuses)} cold, ${statusList(r.beside.warm.statuses)} warm | ${met(inTime && r.beside.cold.statuses['200'] === r.beside.cold.sent && r.beside.warm.statuses['200'] === r.beside.warm.sent)} |`,
    `| a small cold request beside it within 2× its alone-cold p50 | ${coldRatio.toFixed(2)}× (${ms(r.beside.cold.latency.p50)} against ${ms(r.alone.cold.latency.p50)} ms) | ${met(coldRatio <= 2)} |`,
    `| a small warm request beside it within alone-warm + one decode | ${ms(r.beside.warm.latency.p50)} ms against ${ms(r.alone.warm.latency.p50)} + ${ms(r.decodeMs)} = ${ms(warmGoal)} ms | ${met(r.beside.warm.latency.p50 <= warmGoal)} |`,
    '',
    `Client disconnect: the admitted large request again, its connection closed once the engine had scored half of its branches, after ${c.disconnectAfterS.toFixed(1)} s (the client saw ${c.clientSaw}). The engine's queue was ${c.idleAfterS === null ? `still busy ${c.limitS.toFixed(0)} s later` : `empty ${c.idleAfterS.toFixed(1)} s later`}; it scored ${c.branchesBeforeDisconnect ?? '?'} branches before the disconnect and ${c.branchesAfterDisconnect ?? '?'} after it; \`arbitra_engine_jobs_cancelled_total\` ${c.jobsCancelled === null ? 'is not exported' : `rose by ${c.jobsCancelled}`}. A small request sent just after the disconnect: ${c.smallAfterDisconnect.outcome} in ${ms(c.smallAfterDisconnect.ms)} ms. **${wasCancelled(c) ? 'Cancelled' : 'Not cancelled'}**.`,
  ].join('\n');
}

await main();
