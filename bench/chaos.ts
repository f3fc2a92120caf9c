// `npm run bench:chaos`: kills under load on the default model, the long version of
// test/cluster/chaos.test.ts. `arbitra serve --workers 2`, one API key whose clients send one
// identical one-question body without pause (its state stays cached) and fresh states with a yes/no
// and a three-way choice, a second key with fresh states of its own; an HTTP worker, the engine or
// both killed with SIGKILL in turn, --kills times (default 60). For each kill: whether every request
// got an answer, and how long until a decision with a new state of the load key succeeded. Writes
// bench/out/chaos.json and the "Chaos" section of bench/RESULTS.md.
import os from 'node:os';
import { ONE_KEY_MIX, runChaos, type ChaosReport, type KillTarget } from './lib/chaos.js';
import { benchArgs, numberOption } from './lib/options.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve, serverNotes } from './lib/serve.js';
import { latencySummary, ms } from './lib/stats.js';

const { values, common } = benchArgs({
  kills: { type: 'string' },
  /** Seconds of load before the first kill and after each heal. */
  settle: { type: 'string' },
  /** ARBITRA_REQUEST_DEADLINE_SECONDS of the server. */
  deadline: { type: 'string' },
});
const kills = numberOption(values.kills, 'kills', 60);
const settleS = numberOption(values.settle, 'settle', 10);
const deadlineS = numberOption(values.deadline, 'deadline', 120);
const HEAL_WITHIN_MS = 45_000;
const TARGETS: KillTarget[] = ['worker', 'engine', 'both'];
const log = (msg: string): void => void process.stdout.write(`[bench:chaos] ${msg}\n`);

async function main(): Promise<void> {
  const server = await serve({ model: common.model, workers: 2, env: { ARBITRA_REQUEST_DEADLINE_SECONDS: String(deadlineS) } });
  log(`serving on ${server.url} (primary ${server.pid}); ${kills} kills, ${settleS} s of load around each`);
  try {
    const load = await server.createKey('chaos-load@example.com', 'load');
    const other = await server.createKey('chaos-other@example.com', 'other');
    const report = await runChaos({
      url: server.url,
      primary: server.pid,
      keys: { load: load.key, other: other.key },
      clients: ONE_KEY_MIX,
      kills: Array.from({ length: kills }, (_, i) => TARGETS[i % TARGETS.length]!),
      settleMs: settleS * 1000,
      answerWithinMs: (deadlineS + 30) * 1000,
      healWithinMs: HEAL_WITHIN_MS,
      log,
    });
    const notes = serverNotes(server, log);
    const result = {
      date: new Date().toISOString(),
      cpus: os.availableParallelism(),
      command: server.command,
      kills,
      settleS,
      deadlineS,
      report,
      serverLog: notes.slice(-40),
    };
    writeRawResult('chaos', result);
    publishSection(common.resultsFile, 'Chaos (`npm run bench:chaos`)', summary(result), log);
  } finally {
    await server.stop();
  }
}

function summary(r: { date: string; cpus: number; command: string; kills: number; settleS: number; deadlineS: number; report: ChaosReport }): string {
  const { report } = r;
  const statuses = [...new Set(report.requests.map((q) => q.outcome))].sort();
  const healed = report.kills.filter((k) => k.healedMs !== null);
  const byTarget = TARGETS.map((target) => {
    const mine = report.kills.filter((k) => k.target === target);
    const times = mine.flatMap((k) => (k.healedMs === null ? [] : [k.healedMs]));
    return { target, count: mine.length, healed: times.length, latency: latencySummary(times), silent: mine.reduce((n, k) => n + k.silent, 0) };
  });
  const kinds = ['identical', 'distinct', 'probe'] as const;
  const rows = kinds.flatMap((kind) =>
    (['load', 'other'] as const).flatMap((key) => {
      const mine = report.requests.filter((q) => q.kind === kind && q.key === key);
      if (mine.length === 0) return [];
      const ok = latencySummary(mine.filter((q) => q.outcome === '200').map((q) => q.doneAt - q.sentAt));
      return [
        `| ${kind} | ${key} | ${mine.length} | ${statuses.map((s) => mine.filter((q) => q.outcome === s).length).join(' | ')} | ${ms(ok.p50)} | ${ms(ok.max)} |`,
      ];
    }),
  );
  return [
    `Command: \`npm run bench:chaos -- --kills ${r.kills} --settle ${r.settleS} --deadline ${r.deadlineS}\` (${r.date.slice(0, 16).replace('T', ' ')} UTC; ${r.cpus} cores). Server: \`${r.command}\`.`,
    '',
    `Load: the load key's 3 clients send one identical one-question body without pause (its state stays cached), its 2 others a fresh state with a yes/no and a 3-option choice each time, and a second key's client fresh states too; a refused client pauses 100 ms. Kills, SIGKILL, in turn: the lower-numbered HTTP worker, the engine process, both at once; ${r.settleS} s of load before the first and after each heal. "Healed" is when a decision with a new state of the load key (the case that starved) first succeeded after the kill, tried one at a time; a request with no answer within the deadline + 30 s is silence.`,
    '',
    `Every request answered: **${report.silent.length === 0 ? 'yes' : `no, ${report.silent.length} silent`}** of ${report.requests.length}; kills healed within ${HEAL_WITHIN_MS / 1000} s: **${healed.length} of ${report.kills.length}**.`,
    '',
    '| kill | times | healed | heal p50 s | heal max s | silent requests |',
    '|---|---|---|---|---|---|',
    ...byTarget.map(
      (b) => `| ${b.target} | ${b.count} | ${b.healed} | ${(b.latency.p50 / 1000).toFixed(1)} | ${(b.latency.max / 1000).toFixed(1)} | ${b.silent} |`,
    ),
    '',
    'Requests by client and outcome (ECONNRESET and the like: the connection a killed worker held; 503: the engine reloading; timeout: silence):',
    '',
    `| client | key | requests | ${statuses.join(' | ')} | p50 ms of 200s | max ms of 200s |`,
    `|---|---|---|${statuses.map(() => '---|').join('')}---|---|`,
    ...rows,
    '',
    ...(report.silent.length
      ? ['Silent requests:', '', ...report.silent.slice(0, 20).map((q) => `- ${q.kind} (${q.key}) sent at ${(q.sentAt / 1000).toFixed(1)} s`)]
      : []),
  ].join('\n');
}

await main();
