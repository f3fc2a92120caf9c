// `npm run bench:soak`: `arbitra serve --workers 2` on a fresh data dir held at saturation for N
// minutes (default 10) by closed-loop clients of three request sizes from several API keys, with
// console traffic whose acknowledged writes (API keys, retained decisions) are recorded. A third of
// the way in one HTTP worker is killed with SIGKILL, two thirds in the engine process. Reports
// responses by status and latency per size, every process's resident memory over time, how long
// decisions took to succeed again after each kill, and whether every acknowledged write survived.
// Writes bench/out/soak.json and the "Soak" section of bench/RESULTS.md.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { decisionBody, type Size } from './lib/bodies.js';
import { call, json, outcome, type Reply } from './lib/http.js';
import { metricTotal } from './lib/metrics.js';
import { benchArgs, numberOption } from './lib/options.js';
import { memoryByProcess, pidsOf, sampleServer, type ProcessMemory, type ProcessSample, type Role } from './lib/procs.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve, serverNotes, type Served } from './lib/serve.js';
import { latencySummary, ms, recoveryAfter, type LatencySummary, type Probe, type Recovery } from './lib/stats.js';

const { values, common } = benchArgs({
  minutes: { type: 'string' },
  /** Closed-loop clients per size: small,medium,large. */
  clients: { type: 'string' },
  /** ARBITRA_REQUEST_DEADLINE_SECONDS of the server. */
  deadline: { type: 'string' },
});
const minutes = numberOption(values.minutes, 'minutes', 10);
const [smallClients, mediumClients, largeClients] = ((values.clients as string | undefined) ?? '4,2,1')
  .split(',')
  .map((n, i) => numberOption(n, `clients[${i}]`, 1));
const CLIENTS: Record<Size, number> = { small: smallClients ?? 4, medium: mediumClients ?? 2, large: largeClients ?? 1 };
const SIZES: Size[] = ['small', 'medium', 'large'];
const USERS = ['soak-a@example.com', 'soak-b@example.com', 'soak-c@example.com'];
const deadlineS = numberOption(values.deadline, 'deadline', 300);
// Every request ends by the server's deadline (504 at the latest): one still unanswered a minute
// after it is silence, the failure this bench must never see.
const REQUEST_TIMEOUT_MS = (deadlineS + 60) * 1000;
// A refused client pauses before its next call, so a server answering 503 in a millisecond does not
// turn the bench into a busy loop that starves the server of the CPU it needs to recover.
const PAUSE_AFTER_FAILURE_MS = 250;
const WRITE_INTERVAL_MS = 1_000;
const PROBE_INTERVAL_MS = 500;
const PROBE_TIMEOUT_MS = 60_000;
const SAMPLE_INTERVAL_MS = 2_000;
const log = (msg: string): void => void process.stdout.write(`[bench:soak] ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Fault {
  what: string;
  role: Exclude<Role, 'primary'>;
  pid: number | null;
  atS: number;
  /** Seconds from the kill until a process of the same role with a new pid was seen. */
  replacedAfterS: number | null;
  recovery: Recovery;
  sent: number;
  /** Probes sent in the window that had not answered when it closed. */
  unanswered: number;
  windowS: number;
}

interface Run {
  server: Served;
  t0: number;
  deadline: number;
  keys: { id: string; key: string }[];
  /**
   * The probes' own key, as a client arriving after the fault would have: the engine shares its
   * batches between keys first, so probes on a load key would queue behind that key's own load.
   */
  probeKey: string;
  ref: number;
}

interface Response {
  size: Size;
  sentS: number;
  outcome: string;
  ms: number;
}

/** Counts per status (HTTP code or why no answer came). */
function tally(rows: readonly Response[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of rows) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
  return counts;
}

const seconds = (run: Run, at = performance.now()): number => (at - run.t0) / 1000;

function decide(run: Run, size: Size, key: string, opts: { retain?: boolean; fresh?: boolean; timeoutMs?: number } = {}): Promise<Reply> {
  const body = decisionBody(size, ++run.ref);
  if (opts.retain) body.options = { ...(body.options as object | undefined), retain: true };
  return call(`${run.server.url}/v1/systemone`, {
    headers: { authorization: `Bearer ${key}` },
    body,
    timeoutMs: opts.timeoutMs ?? REQUEST_TIMEOUT_MS,
    fresh: opts.fresh,
  });
}

/** One closed-loop client: a request of its size after another until the deadline. */
async function client(run: Run, size: Size, n: number, out: Response[], firstErrors: Record<string, string>): Promise<void> {
  for (let i = n; performance.now() < run.deadline; i++) {
    const sentS = seconds(run);
    const r = await decide(run, size, run.keys[i % run.keys.length]!.key);
    out.push({ size, sentS, outcome: outcome(r), ms: r.ms });
    if (r.status === 200) continue;
    firstErrors[outcome(r)] ??=
      `${size} sent at ${sentS.toFixed(1)} s, after ${(r.ms / 1000).toFixed(1)} s: ${json(r)?.detail?.message ?? r.error ?? r.text.slice(0, 200)}`;
    await sleep(PAUSE_AFTER_FAILURE_MS);
  }
}

/** Console traffic: a new API key, then a retained decision, and so on; only acknowledged ones are recorded. */
async function writer(
  run: Run,
  acked: { keys: { email: string; id: string }[]; retained: { id: string; key: string }[] },
  attempts: { keys: number; retained: number },
): Promise<void> {
  for (let i = 0; performance.now() < run.deadline; i++) {
    if (i % 2 === 0) {
      const email = USERS[(i / 2) % USERS.length]!;
      attempts.keys++;
      const r = await call(`${run.server.url}/v1/console/api-keys`, {
        headers: run.server.consoleHeaders(email),
        body: { name: `soak-${i}` },
        timeoutMs: 30_000,
      });
      const id = json(r)?.id;
      if (r.status === 200 && typeof id === 'string') acked.keys.push({ email, id });
    } else {
      const key = run.keys[i % run.keys.length]!.key;
      attempts.retained++;
      const r = await decide(run, 'small', key, { retain: true });
      const id = json(r)?.id;
      if (r.status === 200 && typeof id === 'string') acked.retained.push({ id, key });
    }
    await sleep(WRITE_INTERVAL_MS);
  }
}

/**
 * At `atS` into the run, SIGKILLs the lowest pid of `role`, then probes with small decisions from
 * the probe key, one at a time on fresh connections (spread over both workers), until `untilS`, and says when decisions answered
 * again for good and when the primary had started a replacement process.
 */
async function fault(run: Run, what: string, role: Fault['role'], atS: number, untilS: number): Promise<Fault> {
  await sleep(Math.max(0, run.t0 + atS * 1000 - performance.now()));
  const before = pidsOf(run.server.pid, role);
  const pid = before[0] ?? null;
  const killedAt = performance.now();
  if (pid === null) log(`${what}: no ${role} process found to kill`);
  else {
    process.kill(pid, 'SIGKILL');
    log(`${what}: killed ${role} ${pid} at ${seconds(run, killedAt).toFixed(1)} s`);
  }
  const windowEnd = run.t0 + untilS * 1000;
  const probes: Promise<Probe>[] = [];
  let replacedAt: number | null = null;
  const watch = (async () => {
    while (replacedAt === null && performance.now() < windowEnd) {
      if (pidsOf(run.server.pid, role).some((p) => !before.includes(p))) replacedAt = performance.now();
      else await sleep(100);
    }
  })();
  while (performance.now() < windowEnd) {
    const sentAt = performance.now();
    // One probe at a time: probes sent faster than their key's share of the engine would only
    // measure their own queue.
    const probe = decide(run, 'small', run.probeKey, { fresh: true, timeoutMs: PROBE_TIMEOUT_MS }).then((r) => ({
      sentAt,
      doneAt: sentAt + r.ms,
      ok: r.status === 200,
    }));
    probes.push(probe);
    await probe;
    await sleep(PROBE_INTERVAL_MS);
  }
  await watch;
  // A failure that came back after the next fault may be that fault's doing; a success is a success.
  const all = await Promise.all(probes);
  const counted = all.filter((p) => p.ok || p.doneAt <= windowEnd);
  return {
    what,
    role,
    pid,
    atS: seconds(run, killedAt),
    replacedAfterS: replacedAt === null ? null : (replacedAt - killedAt) / 1000,
    recovery: recoveryAfter(killedAt, counted),
    sent: all.length,
    unanswered: all.filter((p) => p.doneAt > windowEnd).length,
    windowS: (windowEnd - killedAt) / 1000,
  };
}

/** Retries a verification call through transient refusals (a worker still restarting). */
async function settled(send: () => Promise<Reply>): Promise<Reply> {
  let r = await send();
  for (let i = 0; i < 5 && (r.status === 0 || r.status >= 500); i++) {
    await sleep(2_000);
    r = await send();
  }
  return r;
}

async function verify(run: Run, acked: { keys: { email: string; id: string }[]; retained: { id: string; key: string }[] }) {
  const listed = new Set<string>();
  const listErrors: string[] = [];
  for (const email of USERS) {
    const r = await settled(() => call(`${run.server.url}/v1/console/api-keys`, { headers: run.server.consoleHeaders(email), timeoutMs: 30_000 }));
    const keys = json(r)?.keys;
    if (r.status !== 200 || !Array.isArray(keys)) listErrors.push(`${email}: ${outcome(r)}`);
    else for (const k of keys) if (k.revoked_at == null) listed.add(k.id);
  }
  const deletions: Record<string, number> = {};
  for (const { id, key } of acked.retained) {
    const r = await settled(() =>
      call(`${run.server.url}/v1/retention/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` }, timeoutMs: 30_000 }),
    );
    deletions[outcome(r)] = (deletions[outcome(r)] ?? 0) + 1;
  }
  return {
    keysAcked: acked.keys.length,
    keysMissing: acked.keys.filter((k) => !listed.has(k.id)).map((k) => k.id),
    listErrors,
    retainedAcked: acked.retained.length,
    deletions,
  };
}

async function main(): Promise<void> {
  const server = await serve({ model: common.model, workers: 2, env: { ARBITRA_REQUEST_DEADLINE_SECONDS: String(deadlineS) } });
  log(`serving on ${server.url} (primary ${server.pid}); ${minutes} min, clients ${SIZES.map((s) => `${s} ${CLIENTS[s]}`).join(', ')}`);
  try {
    const keys = [];
    for (const email of USERS) keys.push(await server.createKey(email, 'load'));
    const acked = { keys: keys.map((k, i) => ({ email: USERS[i]!, id: k.id })), retained: [] as { id: string; key: string }[] };
    const attempts = { keys: keys.length, retained: 0 };
    const t0 = performance.now();
    const probeKey = (await server.createKey('soak-probe@example.com', 'probe')).key;
    const run: Run = { server, t0, deadline: t0 + minutes * 60_000, keys, probeKey, ref: 0 };
    const total = minutes * 60;

    const timeline: { atS: number; samples: ProcessSample[] }[] = [];
    const sample = (): void => void timeline.push({ atS: seconds(run), samples: sampleServer(server.pid) });
    sample();
    const sampler = setInterval(sample, SAMPLE_INTERVAL_MS);

    const responses: Response[] = [];
    const firstErrors: Record<string, string> = {};
    const loops = SIZES.flatMap((size) => Array.from({ length: CLIENTS[size] }, (_, n) => client(run, size, n, responses, firstErrors)));
    const phases = [
      { name: 'before the kills', fromS: 0 },
      { name: 'after the worker kill', fromS: total / 3 },
      { name: 'after the engine kill', fromS: (2 * total) / 3 },
    ];
    const faults = Promise.all([
      fault(run, 'HTTP worker killed', 'worker', phases[1]!.fromS, phases[2]!.fromS),
      fault(run, 'engine process killed', 'engine', phases[2]!.fromS, total),
    ]);
    await Promise.all([...loops, writer(run, acked, attempts)]);
    const faultRows = await faults;
    sample();
    clearInterval(sampler);
    const elapsedS = seconds(run);
    log(
      `load done after ${elapsedS.toFixed(0)} s; ${responses.length} responses; verifying ${acked.keys.length} keys and ${acked.retained.length} retained decisions`,
    );

    const metrics = await call(`${server.url}/metrics`, { timeoutMs: 10_000 });
    const engineRestarts = metricTotal(metrics.text, 'arbitra_engine_restarts_total');
    const verification = await verify(run, acked);
    const memory = memoryByProcess(timeline);
    const bySize = SIZES.map((size) => {
      const rows = responses.filter((r) => r.size === size);
      return {
        size,
        clients: CLIENTS[size],
        requests: rows.length,
        statuses: tally(rows),
        latency: latencySummary(rows.filter((r) => r.outcome === '200').map((r) => r.ms)),
      };
    });
    const byPhase = phases.flatMap((phase, i) => {
      const until = phases[i + 1]?.fromS ?? Infinity;
      return SIZES.map((size) => ({
        phase: phase.name,
        size,
        statuses: tally(responses.filter((r) => r.size === size && r.sentS >= phase.fromS && r.sentS < until)),
      }));
    });
    for (const e of Object.entries(firstErrors)) log(`first ${e[0]}: ${e[1]}`);
    const serverLog = serverNotes(server, log);

    const result: SoakResult = {
      date: new Date().toISOString(),
      cpus: os.availableParallelism(),
      loadavg1: os.loadavg()[0] ?? NaN,
      command: server.command,
      minutes,
      elapsedS,
      clients: CLIENTS,
      bySize,
      byPhase,
      firstErrors,
      faults: faultRows,
      memory,
      engineRestarts,
      attempts,
      verification,
      serverLog,
    };
    writeRawResult('soak', result);
    publishSection(common.resultsFile, 'Soak (`npm run bench:soak`)', report(result), log);
  } finally {
    await server.stop();
  }
}

const s1 = (x: number | null): string => (x === null ? 'not within the window' : `${x.toFixed(1)} s`);
const answeringAgain = (f: Fault): string => (f.recovery.probes === 0 ? 'no probe answered' : s1(f.recovery.ms === null ? null : f.recovery.ms / 1000));

interface SoakResult {
  date: string;
  cpus: number;
  loadavg1: number;
  command: string;
  minutes: number;
  elapsedS: number;
  clients: Record<Size, number>;
  bySize: { size: Size; clients: number; requests: number; statuses: Record<string, number>; latency: LatencySummary }[];
  byPhase: { phase: string; size: Size; statuses: Record<string, number> }[];
  firstErrors: Record<string, string>;
  faults: Fault[];
  memory: ProcessMemory[];
  engineRestarts: number | null;
  attempts: { keys: number; retained: number };
  verification: Awaited<ReturnType<typeof verify>>;
  serverLog: string[];
}

function report(r: SoakResult): string {
  const statuses = [...new Set(r.bySize.flatMap((s) => Object.keys(s.statuses)))].sort();
  const v = r.verification;
  const deleted = v.deletions['200'] ?? 0;
  return [
    `Command: \`npm run bench:soak -- --minutes ${r.minutes} --deadline ${deadlineS}\` (${r.date.slice(0, 16).replace('T', ' ')} UTC; ${r.cpus} cores, 1-minute load average ${r.loadavg1.toFixed(2)} at the end). Server: \`${r.command}\` with default limits.`,
    '',
    `${r.elapsedS.toFixed(0)} s of closed-loop load (each client sends its next request when the last one is answered, pausing ${PAUSE_AFTER_FAILURE_MS} ms after a failure) from ${USERS.length} API keys of ${USERS.length} users; small = 1 yes/no question on a one-line state, medium = 4 choice questions × 4 permute passes on a ticket, large = 50 yes/no questions on the ticket; every state carries its own reference number. Console traffic alternates, one a second, creating an API key and a small decision with \`options.retain: true\`. Latency is over 200 answers only; a column named like ECONNRESET is a socket error with no answer (the connections the killed worker held), "timeout" no answer within ${REQUEST_TIMEOUT_MS / 1000} s, a minute past the server's deadline: silence.`,
    '',
    `| size | clients | requests | ${statuses.join(' | ')} | p50 ms | p99 ms | max ms |`,
    `|---|---|---|${statuses.map(() => '---|').join('')}---|---|---|`,
    ...r.bySize.map(
      (s) =>
        `| ${s.size} | ${s.clients} | ${s.requests} | ${statuses.map((k) => s.statuses[k] ?? 0).join(' | ')} | ${ms(s.latency.p50)} | ${ms(s.latency.p99)} | ${ms(s.latency.max)} |`,
    ),
    '',
    ...Object.entries(r.firstErrors).map(([k, m]) => `- first ${k}: ${m}`),
    '',
    'The same responses by when they were sent:',
    '',
    `| sent | size | ${statuses.join(' | ')} |`,
    `|---|---|${statuses.map(() => '---|').join('')}`,
    ...r.byPhase.map((p) => `| ${p.phase} | ${p.size} | ${statuses.map((k) => p.statuses[k] ?? 0).join(' | ')} |`),
    '',
    `Faults (SIGKILL). "Answering again" is from the kill until the first success among the probes sent after the last failed one (small decisions from a key of their own, one at a time, ${PROBE_INTERVAL_MS} ms apart, each on a fresh connection so both workers are asked; a probe counts as failed after ${PROBE_TIMEOUT_MS / 1000} s); a fault's window lasts until the next kill or the end of the load, a failure that came back after it is left out (the next kill may have caused it) and a late success counts; "not within the window" means the last probes to answer had failed. Engine restarts counted by the server: ${r.engineRestarts ?? 'not exported'}.`,
    '',
    '| fault | pid | at | new process seen after | answering again after | probes sent | failed in the window | unanswered when it closed | window |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.faults.map(
      (f) =>
        `| ${f.what} | ${f.pid ?? 'none found'} | ${f.atS.toFixed(0)} s | ${s1(f.replacedAfterS)} | ${answeringAgain(f)} | ${f.sent} | ${f.recovery.failed} | ${f.unanswered} | ${f.windowS.toFixed(0)} s |`,
    ),
    '',
    `Resident memory per process (MiB), sampled every ${SAMPLE_INTERVAL_MS / 1000} s; a restarted process is a new row:`,
    '',
    '| process | pid | seen from – to | start | max | end |',
    '|---|---|---|---|---|---|',
    ...r.memory.map(
      (m) =>
        `| ${m.role} | ${m.pid} | ${m.firstSeenS.toFixed(0)}–${m.lastSeenS.toFixed(0)} s | ${m.rssMb.start.toFixed(0)} | ${m.rssMb.max.toFixed(0)} | ${m.rssMb.end.toFixed(0)} |`,
    ),
    '',
    `Acknowledged writes after the run: ${v.keysAcked - v.keysMissing.length} of ${v.keysAcked} API keys listed by \`GET /v1/console/api-keys\` (${r.attempts.keys} attempted)${v.keysMissing.length ? `; missing: ${v.keysMissing.join(', ')}` : ''}${v.listErrors.length ? `; listing failed for ${v.listErrors.join(', ')}` : ''}; ${deleted} of ${v.retainedAcked} retained decisions deleted by \`DELETE /v1/retention/{id}\` (${r.attempts.retained} attempted)${
      deleted < v.retainedAcked
        ? `; the others answered ${Object.entries(v.deletions)
            .filter(([k]) => k !== '200')
            .map(([k, n]) => `${k} × ${n}`)
            .join(', ')}`
        : ''
    }.`,
  ].join('\n');
}

await main();
