// `npm run bench:state-growth`: what a caller can make the server keep. On a server with 2 HTTP
// workers and LMDB, on each HTTP front: the size of /metrics (the primary's aggregate over the
// workers) before and after 300 requests with invented methods on unknown paths, sent without a
// key; and how many bytes of traces one key stores when it posts them, about one retained decision,
// until the server refuses or it has sent --max-mib. The model only makes that one decision: any
// model gives the same figures. Writes bench/out/state-growth.json and the "State a caller can
// grow" section of bench/RESULTS.md.
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../src/paths.js';
import { call, json } from './lib/http.js';
import { benchArgs, numberOption } from './lib/options.js';
import { publishSection, writeRawResult } from './lib/results.js';
import { serve } from './lib/serve.js';

const { values, common } = benchArgs({
  /** Trace JSON one key sends at most, in MiB, when nothing refuses it first. */
  'max-mib': { type: 'string' },
});
const maxBytes = numberOption(values['max-mib'], 'max-mib', 96) * 1024 * 1024;
const log = (msg: string): void => void process.stdout.write(`[bench:state-growth] ${msg}\n`);

const METHODS = 300;
/** Traces per request: 60 of about 15 KB stay under the default 1 MiB body limit. */
const PER_REQUEST = 60;
const METADATA = { note: 'x'.repeat(15_000) };
const TIMEOUT_MS = 60_000;

interface Front {
  front: 'uws' | 'node';
  command: string;
  /** /metrics bytes on a fresh server, after the first invented method, and after all of them. */
  metrics: [number, number, number];
  tracesSentBytes: number;
  tracesAcceptedBytes: number;
  /** The first refusal: its status and error type; null when every request was a 200 with nothing rejected. */
  refusal: { status: number; errorType: string | null; storedBytes: number | null } | null;
}

async function measure(front: Front['front']): Promise<Front> {
  const server = await serve({ model: common.model, workers: 2, env: front === 'node' ? { ARBITRA_HTTP: 'node' } : {} });
  try {
    const metricsBytes = async () => Buffer.byteLength((await call(`${server.url}/metrics`, { timeoutMs: TIMEOUT_MS })).text);
    const invent = (i: number) => call(`${server.url}/nowhere-${i}`, { method: `BREW${i}`, fresh: true, timeoutMs: TIMEOUT_MS });
    const metrics: Front['metrics'] = [await metricsBytes(), 0, 0];
    await invent(0);
    metrics[1] = await metricsBytes();
    for (let i = 1; i < METHODS; i++) await invent(i);
    metrics[2] = await metricsBytes();
    log(`${front}: /metrics ${metrics.join(' → ')} bytes: fresh, after 1 and after ${METHODS} invented methods`);

    const { key } = await server.createKey('tracer@example.com', 'bench:state-growth');
    const auth = { authorization: `Bearer ${key}` };
    const decision = await call(`${server.url}/v1/systemone`, {
      headers: auth,
      body: { state: 'My invoice is wrong.', questions: { q: { instructions: 'Is this about billing?' } }, options: { retain: true } },
      timeoutMs: 600_000,
    });
    const id = json(decision)?.id as string | undefined;
    if (decision.status !== 200 || !id) throw new Error(`the retained decision answered ${decision.status}: ${decision.text.slice(0, 300)}`);
    let sent = 0;
    let accepted = 0;
    let refusal: Front['refusal'] = null;
    for (let n = 0; sent < maxBytes && !refusal; n++) {
      const body = Array.from({ length: PER_REQUEST }, (_, i) => ({ request_id: id, question: `q${n}-${i}`, outcome: true, metadata: METADATA }));
      const bytes = body.reduce((sum, item) => sum + Buffer.byteLength(JSON.stringify(item)), 0);
      const r = await call(`${server.url}/v1/traces`, { headers: auth, body, timeoutMs: TIMEOUT_MS });
      const answer = json(r);
      sent += bytes;
      if (r.status === 200 && answer?.accepted === PER_REQUEST) accepted += bytes;
      else {
        const detail = answer?.detail as Record<string, unknown> | undefined;
        refusal = {
          status: r.status,
          errorType: (detail?.error_type as string | undefined) ?? null,
          storedBytes: (detail?.stored_bytes as number | undefined) ?? null,
        };
      }
    }
    log(`${front}: ${mib(accepted)} MiB of trace JSON accepted of ${mib(sent)} MiB sent; ${refusal ? `refused with ${refusal.status}` : 'never refused'}`);
    return { front, command: server.command, metrics, tracesSentBytes: sent, tracesAcceptedBytes: accepted, refusal };
  } finally {
    await server.stop();
  }
}

const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);

async function main(): Promise<void> {
  const rows: Front[] = [];
  for (const front of ['uws', 'node'] as const) rows.push(await measure(front));
  writeRawResult('state-growth', { date: new Date().toISOString(), cpus: os.availableParallelism(), model: path.relative(packageRoot(), common.model), rows });
  const body = [
    `${METHODS} requests with invented methods (\`BREW0\`…) on unknown paths, no key, each on a new connection; then one key`,
    `posts traces about one retained decision, ${PER_REQUEST} of about 15 KB a request, until refused or ${mib(maxBytes)} MiB sent.`,
    '',
    '| front | /metrics fresh | after 1 method | after 300 | trace JSON sent | accepted | first refusal |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.front} | ${r.metrics.map((b) => `${b} B`).join(' | ')} | ${mib(r.tracesSentBytes)} MiB | ${mib(r.tracesAcceptedBytes)} MiB | ${
          r.refusal
            ? `${r.refusal.status} ${r.refusal.errorType ?? ''}${r.refusal.storedBytes === null ? '' : `, ${mib(r.refusal.storedBytes)} MiB stored`}`
            : 'none'
        } |`,
    ),
    '',
    `Servers: \`${rows[0]!.command}\` (and \`ARBITRA_HTTP=node\`). Command: \`npm run bench:state-growth -- --model ${path.relative(packageRoot(), common.model)}\`.`,
  ].join('\n');
  publishSection(common.resultsFile, 'State a caller can grow', body, log);
}

await main();
