// `npm run bench:hostile`: the requests of bench/lib/hostile-cases.ts (issue 50's two, then the
// worst cases found since), one at a time against `arbitra serve --workers 2` on the default model:
// what the client got (the status, or the socket error it met instead), how many bytes, how long,
// and the CPU the server's primary and HTTP workers spent on it (from /proc; none of these reaches
// the engine). The client sends each body whole before it reads, as most clients do. With
// `--baseline DIR`, a checkout of an earlier commit with its dist/ built, the same requests go to
// it first and the table shows both. Goal: every answer under 1 MiB and under 1 s of CPU.
// Writes bench/out/hostile.json and the "Hostile requests" section of bench/RESULTS.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostileCases, type HostileCase } from './lib/hostile-cases.js';
import { call } from './lib/http.js';
import { benchArgs } from './lib/options.js';
import { cpuTicks, pidsOf, ticksPerSecond } from './lib/procs.js';
import { sendThenRead, type RawReply } from './lib/raw-http.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve, type Served } from './lib/serve.js';

const { values, common } = benchArgs({
  /** A checkout of an earlier commit, built, to measure first. */
  baseline: { type: 'string' },
});
const MiB = 1024 * 1024;
// Some of these held a worker for minutes before the fix, or were never answered; the slowest one
// answered took 65 s on the loaded 2-core machine.
const TIMEOUT_MS = 120_000;
const log = (msg: string): void => void process.stdout.write(`[bench:hostile] ${msg}\n`);
const hz = ticksPerSecond();

interface Measured {
  answer: string;
  bytes: number;
  seconds: number;
  cpuSeconds: number;
  /** HTTP workers that were replaced while it ran (a crash). */
  restarted: boolean;
}

/** CPU seconds so far of the primary (with the children it reaped) and its HTTP workers. */
function serverCpu(primary: number): { seconds: number; workers: number[] } {
  const workers = pidsOf(primary, 'worker');
  let ticks = 0;
  for (const pid of [primary, ...workers]) {
    try {
      ticks += cpuTicks(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      // Gone between the scan and the read: its time reaches the primary once reaped.
    }
  }
  return { seconds: ticks / hz, workers };
}

function answerOf(reply: RawReply): string {
  if (reply.status === null) return reply.error === 'timeout' ? `no answer in ${TIMEOUT_MS / 1000} s` : `no answer (${reply.error ?? 'closed'})`;
  if (!reply.complete) return `${reply.status}, cut short (${reply.error ?? 'closed'})`;
  return reply.error ? `${reply.status} then ${reply.error}` : String(reply.status);
}

async function measure(server: Served, key: string, c: HostileCase): Promise<Measured> {
  const port = Number(new URL(server.url).port);
  const before = serverCpu(server.pid);
  const headers = { ...c.request.headers, ...(c.keyed ? { authorization: `Bearer ${key}` } : {}) };
  const reply = await sendThenRead(port, { ...c.request, headers, timeoutMs: TIMEOUT_MS });
  // A worker still busy after a timeout keeps counting; what it spent by now is what is reported.
  const after = serverCpu(server.pid);
  const restarted = before.workers.some((pid) => !after.workers.includes(pid));
  return { answer: answerOf(reply), bytes: reply.bodyBytes, seconds: reply.ms / 1000, cpuSeconds: after.seconds - before.seconds, restarted };
}

/** A server of the build in `checkout` (this one when undefined), its key, and its engine loaded. */
async function start(checkout: string | undefined): Promise<{ server: Served; key: string }> {
  const server = await serve({ model: common.model, workers: 2, checkout });
  try {
    const { key } = await server.createKey('hostile@example.com', 'hostile');
    // One decision first, so the engine's load is over before anything is timed.
    const warm = await call(`${server.url}/v1/systemone`, {
      headers: { authorization: `Bearer ${key}` },
      body: { state: 'The invoice was paid twice.', questions: { q: { instructions: 'Is this about money?' } } },
      timeoutMs: 600_000,
    });
    if (warm.status !== 200) throw new Error(`the warm-up decision answered ${warm.status}: ${warm.text.slice(0, 300)}`);
    return { server, key };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/**
 * Every case against the build in `checkout` (this one when undefined). A case that went
 * unanswered or cost a worker leaves a fresh server for the next, which would otherwise share a
 * worker still busy with it.
 */
async function run(cases: HostileCase[], checkout: string | undefined): Promise<{ command: string; results: Measured[] }> {
  const who = checkout ? 'baseline' : 'this tree';
  let current = await start(checkout);
  const command = current.server.command;
  const results: Measured[] = [];
  try {
    for (const c of cases) {
      const m = await measure(current.server, current.key, c);
      log(
        `${who}: ${c.name}: ${m.answer}, ${m.bytes} bytes, ${m.seconds.toFixed(2)} s, ${m.cpuSeconds.toFixed(2)} s CPU${m.restarted ? ', a worker restarted' : ''}`,
      );
      results.push(m);
      if (m.restarted || m.answer.startsWith('no answer')) {
        log(`${who}: a fresh server for the next case`);
        await current.server.stop();
        current = await start(checkout);
      }
    }
    return { command, results };
  } finally {
    await current.server.stop();
  }
}

const bytes = (n: number): string => (n >= MiB ? `${(n / MiB).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);
const sentBytes = (c: HostileCase): string => bytes(Buffer.isBuffer(c.request.body) ? c.request.body.length : c.request.body);
const cell = (m: Measured): string[] => [
  m.answer + (m.restarted ? ' (a worker restarted)' : ''),
  bytes(m.bytes),
  m.seconds.toFixed(2),
  m.cpuSeconds.toFixed(2),
];

async function main(): Promise<void> {
  const cases = hostileCases();
  const baselineDir = values.baseline === undefined ? undefined : path.resolve(values.baseline as string);
  const before = baselineDir ? await run(cases, baselineDir) : null;
  const after = await run(cases, undefined);
  const worst = { bytes: Math.max(...after.results.map((m) => m.bytes)), cpuSeconds: Math.max(...after.results.map((m) => m.cpuSeconds)) };
  const met = after.results.every((m, i) => m.bytes < MiB && m.cpuSeconds < 1 && m.answer === String(cases[i]!.expected));
  const result = {
    date: new Date().toISOString(),
    cpus: os.availableParallelism(),
    command: after.command,
    baseline: baselineDir ?? null,
    cases: cases.map((c) => c.name),
    before,
    after,
    worst,
    met,
  };
  writeRawResult('hostile', result);

  const head = before
    ? ['| what was sent | sent | before: answer | bytes | s | CPU s | after: answer | bytes | s | CPU s |', '|---|---|---|---|---|---|---|---|---|---|']
    : ['| what was sent | sent | answer | bytes | s | CPU s |', '|---|---|---|---|---|---|'];
  const rows = cases.map((c, i) => `| ${[c.name, sentBytes(c), ...(before ? cell(before.results[i]!) : []), ...cell(after.results[i]!)].join(' | ')} |`);
  publishSection(
    common.resultsFile,
    `Hostile requests (\`npm run bench:hostile\`, ${common.model.split('/').pop()})`,
    [
      `Command: \`npm run bench:hostile${values.model ? ` -- --model ${values.model}` : ''}${baselineDir ? ` -- --baseline <checkout of the earlier commit>` : ''}\` (${result.date.slice(0, 16).replace('T', ' ')} UTC; ${result.cpus} cores). Server: \`${after.command}\`.`,
      '',
      `Each request once, on an otherwise idle server, with an API key where the route takes one; the client sends the whole body before it reads, as most clients do. Answer: the status, or what the client met instead (given up after ${TIMEOUT_MS / 1000} s; the next case then has a fresh server). CPU: what the primary and the HTTP workers spent meanwhile (/proc, 10 ms ticks; none of these requests reaches the engine), by the time the answer came or the client gave up. Goal: every answer under 1 MiB and under 1 s of CPU.`,
      '',
      ...head,
      ...rows,
      '',
      `Largest answer ${bytes(worst.bytes)}, most CPU ${worst.cpuSeconds.toFixed(2)} s: goal ${met ? 'met' : 'missed'}.`,
    ].join('\n'),
    log,
  );
}

await main();
