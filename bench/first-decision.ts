// `npm run bench:first-decision`: how long a newcomer waits for README's example, the three-question
// decision with 4 permute passes, each time about a state the server has never seen, on a server
// started the way README starts it (default model, 2 HTTP workers), from the first request after
// it says it listens (its self-test still running). The official JS client (@typesafe-ai/sdk,
// unmodified, default settings) gives up on an attempt after 10 s and retries twice: the same
// request is then sent through it, and every attempt is counted. With --compare-max-step-ms V a
// server with that --max-step-ms is measured the same way after the first one has stopped, so that
// neither meets the other's start-up; --starts N starts each server N times for its first request
// alone before the last start's runs. Writes bench/out/first-decision.json and the "First decision"
// section of bench/RESULTS.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { TypeSafeClient } from '@typesafe-ai/sdk';
import { packageRoot } from '../src/paths.js';
import { call, outcome } from './lib/http.js';
import { readmeExample } from './lib/bodies.js';
import { benchArgs, numberOption } from './lib/options.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve, type Served } from './lib/serve.js';
import { latencySummary, ms, type LatencySummary } from './lib/stats.js';

const { values, common } = benchArgs({
  /** Requests per server and client. */
  runs: { type: 'string' },
  /** A second server with this --max-step-ms, measured after the first, for a before/after in one run. */
  'compare-max-step-ms': { type: 'string' },
  /** Times each server is started and sent one request as soon as it listens, before the last start's runs. */
  starts: { type: 'string' },
});
const runs = numberOption(values.runs, 'runs', 20);
const starts = numberOption(values.starts, 'starts', 1);
const compare = values['compare-max-step-ms'] === undefined ? null : numberOption(values['compare-max-step-ms'], 'compare-max-step-ms', 250);
const log = (msg: string): void => void process.stdout.write(`[bench:first-decision] ${msg}\n`);
/** The official JS client's own default, which an unmodified client runs with. */
const SDK_TIMEOUT_MS = 10_000;

const example = readmeExample(fs.readFileSync(path.join(packageRoot(), 'README.md'), 'utf8'));
let reference = 0;
/** README's example about a state never asked before: its own reference at the end. */
const fresh = (): Record<string, unknown> => ({ ...example, state: `${example.state} (reference ${++reference})` });

interface Side {
  name: string;
  server: Served;
  key: string;
  client: TypeSafeClient;
  /** Milliseconds of each direct request, the first one sent as soon as the server listened. */
  direct: number[];
  /** The first request after each start, the last start's included. */
  firsts: number[];
  failures: string[];
  sdk: { ms: number[]; ok: number; failed: string[]; attempts: number };
}

async function side(name: string, args: string[]): Promise<Side> {
  const server = await serve({ model: common.model, workers: 2, args });
  const { key } = await server.createKey('first@example.com', 'bench:first-decision');
  const sdk = { ms: [], ok: 0, failed: [], attempts: 0 };
  // Defaults but the address and key (timeout 10 s, two retries); its fetch counts the attempts.
  const counting: typeof fetch = (input, init) => {
    sdk.attempts++;
    return fetch(input, init);
  };
  const client = new TypeSafeClient({ baseURL: server.url, apiKey: key, logLevel: 'off', fetch: counting });
  return { name, server, key, client, direct: [], firsts: [], failures: [], sdk };
}

async function direct(s: Side): Promise<void> {
  const r = await call(`${s.server.url}/v1/systemone`, { headers: { authorization: `Bearer ${s.key}` }, body: fresh(), timeoutMs: 600_000 });
  if (r.status === 200) s.direct.push(r.ms);
  else s.failures.push(outcome(r));
}

async function viaSdk(s: Side): Promise<void> {
  const started = performance.now();
  try {
    await s.client.systemOne(fresh() as unknown as Parameters<TypeSafeClient['systemOne']>[0]);
    s.sdk.ok++;
    s.sdk.ms.push(performance.now() - started);
  } catch (err) {
    s.sdk.failed.push((err as Error).constructor.name);
  }
}

async function main(): Promise<void> {
  const configs: [string, string[]][] = [['default', []]];
  if (compare !== null) configs.push([`--max-step-ms ${compare}`, ['--max-step-ms', String(compare)]]);
  const sides: Side[] = [];
  for (const [name, args] of configs) {
    const firsts: number[] = [];
    for (let start = 1; start < starts; start++) {
      log(`starting ${name} (${common.model}), start ${start} of ${starts}`);
      const s = await side(name, args);
      await direct(s).finally(() => s.server.stop());
      firsts.push(...s.direct);
    }
    log(`starting ${name} (${common.model})`);
    const s = await side(name, args);
    sides.push(s);
    try {
      for (let i = 0; i < runs; i++) await direct(s);
      for (let i = 0; i < runs; i++) await viaSdk(s);
    } finally {
      await s.server.stop();
    }
    s.firsts = [...firsts, s.direct[0] ?? NaN];
  }
  const rows = sides.map((s) => ({
    name: s.name,
    command: s.server.command,
    first: latencySummary(s.firsts),
    direct: latencySummary(s.direct),
    directFailures: s.failures,
    sdk: { ...s.sdk, latency: latencySummary(s.sdk.ms) },
  }));
  for (const r of rows) log(`${r.name}: p50 ${ms(r.direct.p50)} ms, p99 ${ms(r.direct.p99)} ms; SDK ${r.sdk.ok}/${runs} in ${r.sdk.attempts} attempts`);
  const out = { date: new Date().toISOString(), cpus: os.availableParallelism(), model: path.relative(packageRoot(), common.model), runs, rows };
  writeRawResult('first-decision', out);
  const cell = (l: LatencySummary): string[] => [ms(l.p50), ms(l.p99), ms(l.max)];
  const command = `npm run bench:first-decision --${compare === null ? '' : ` --compare-max-step-ms ${compare}`}${values.runs ? ` --runs ${runs}` : ''}${starts > 1 ? ` --starts ${starts}` : ''}`;
  publishSection(
    common.resultsFile,
    'First decision',
    `Command: \`${command}\` (${out.date}; ${out.cpus} cores; model ${out.model}). README's example (three questions, \`debias: "permute"\`, 4 passes), each request about a state the server has never seen, one at a time: the first as soon as the server listened (its self-test still running), on each of ${starts} start${starts > 1 ? 's' : ''}; then ${runs} sent directly on the last start (its first one included), then ${runs} through the official JS client (\`@typesafe-ai/sdk\`, default settings: ${SDK_TIMEOUT_MS / 1000} s per attempt, 2 retries)${compare === null ? '' : '; one server after the other, each alone on the machine'}.
${rows.map((r) => `\n- ${r.name}: \`${r.command}\``).join('')}

| server | first after start p50 ms | max ms | direct p50 ms | p99 ms | max ms | failed | SDK answered | SDK attempts | SDK p50 ms | p99 ms | max ms |
|---|---|---|---|---|---|---|---|---|---|---|---|
${rows.map((r) => `| ${r.name} | ${ms(r.first.p50)} | ${ms(r.first.max)} | ${cell(r.direct).join(' | ')} | ${r.directFailures.length} | ${r.sdk.ok} of ${runs} | ${r.sdk.attempts} | ${cell(r.sdk.latency).join(' | ')} |`).join('\n')}
`,
    log,
  );
}

await main();
