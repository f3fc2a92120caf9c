// `npm run bench:engine-port`: what someone on an engine's network, without the secret, can make
// two real engine nodes (`arbitra engine --listen`, one thread each) do: an unproven Score call of
// --size MB (default 200), sent --runs times (default 3), timed from its first byte to the engine's
// answer, with the bytes of it the engine took in and the engine process's resident memory before
// and after it (and its peak); then one API-node call (this commit's client) recorded on the way
// and sent again to its engine, to the sibling and to its engine once restarted, one altered on its way in and one whose reply is
// altered on its way back. The attacks (test/helpers/engine-port-attacks.ts) depend on nothing of
// how the proofs are made, so the same file measures an older commit: copy it and the helper there,
// build, and run `node dist/bench/engine-port.js`. Writes bench/out/engine-port.json and the "Engine
// port" section of bench/RESULTS.md.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { openEngineChannel } from '../src/engine/rpc/client.js';
import { packageRoot } from '../src/paths.js';
import { hugeCall, replaceAll, replay, tamperingProxy, type HugeCallResult } from '../test/helpers/engine-port-attacks.js';
import { startEngineNode, type EngineNode } from '../test/integration/helpers/server.js';
import { benchArgs, numberOption } from './lib/options.js';
import { publishSection, writeRawResult } from './lib/results.js';

const { values, common } = benchArgs({
  runs: { type: 'string' },
  size: { type: 'string' },
});
const runs = numberOption(values.runs, 'runs', 3);
const bytes = numberOption(values.size, 'size', 200) * 1_000_000;
const log = (msg: string): void => void process.stdout.write(`[bench:engine-port] ${msg}\n`);
const SECRET = 'bench-engine-port-secret-0123';
const REQUEST = {
  system: null,
  prefix: 'The parcel arrived broken and I want my money back.\n',
  branches: [{ suffix: 'Refund?', answers: [[1], [2]] }],
  maxPromptTokens: 512,
};

const MIB = 2 ** 20;
function memory(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)![1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

/** Bytes the process has read through read(2) and its kind, sockets included: what it took off the wire. */
function bytesRead(pid: number): number {
  return Number(/^rchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
}

interface HugeRun extends HugeCallResult {
  engineReadBytes: number;
  rssBeforeMiB: number;
  rssGrowthMiB: number;
  peakGrowthMiB: number;
}

async function hugeRuns(engine: EngineNode): Promise<HugeRun[]> {
  const out: HugeRun[] = [];
  for (let i = 0; i < runs; i++) {
    const before = memory(engine.pid);
    const read = bytesRead(engine.pid);
    const call = await hugeCall({ host: '127.0.0.1', port: engine.port }, bytes);
    // The engine frees what it read in its own time: its memory a moment later is what it kept.
    await new Promise((r) => setTimeout(r, 1000));
    const after = memory(engine.pid);
    out.push({
      ...call,
      engineReadBytes: bytesRead(engine.pid) - read,
      rssBeforeMiB: before.rss / MIB,
      rssGrowthMiB: (after.rss - before.rss) / MIB,
      peakGrowthMiB: (after.peak - before.peak) / MIB,
    });
    log(
      `${bytes / 1e6} MB unproven: status ${call.status} after ${call.answeredAfterMs} ms, ${out.at(-1)!.engineReadBytes} bytes read by the engine, RSS +${out.at(-1)!.rssGrowthMiB.toFixed(1)} MiB`,
    );
  }
  return out;
}

/** A score through a proxy: what the caller got. */
async function through(address: string): Promise<{ accepted: boolean; result: string }> {
  const channel = openEngineChannel(address, { secret: SECRET });
  try {
    const r = await channel.score(REQUEST);
    return { accepted: true, result: JSON.stringify(r.branches) };
  } catch (err) {
    return { accepted: false, result: (err as Error).message };
  } finally {
    channel.close();
  }
}

const target = (e: EngineNode) => ({ host: '127.0.0.1', port: e.port });
const model = path.basename(common.model, '.gguf');
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: packageRoot(), encoding: 'utf8' }).trim();

log(`commit ${commit}, model ${model}: starting two engine nodes`);
const engineNode = (port?: number): Promise<EngineNode> => startEngineNode({ ARBITRA_ENGINE_SECRET: SECRET }, { port, args: ['--model', common.model] });
const [first, b] = await Promise.all([engineNode(), engineNode()]);
let a = first;
try {
  // The replays first: the unproven calls below leave their address throttled on a guarded engine.
  const baseline = await through(a.address);
  const recorder = await tamperingProxy(target(a));
  const recorded = await through(recorder.address);
  recorder.close();
  const [recording] = recorder.recorded;
  const sameEngine = (await replay(recording!, target(a))).answered;
  const sibling = (await replay(recording!, target(b))).answered;
  // A restarted engine has forgotten the nonces it saw.
  await a.stop();
  a = await engineNode(a.port);
  const replays = { sameEngine, sibling, restarted: (await replay(recording!, target(a))).answered };
  log(`recorded call: ${recorded.accepted ? 'answered' : recorded.result}; sent again: ${JSON.stringify(replays)}`);

  const inAltered = { n: 0 };
  const inProxy = await tamperingProxy(target(a), { call: (p) => replaceAll(p, Buffer.from('parcel'), Buffer.from('pencil'), inAltered) });
  const alteredCall = await through(inProxy.address);
  inProxy.close();
  log(`call altered on its way in (${inAltered.n} places): ${alteredCall.accepted ? `answered ${alteredCall.result}` : alteredCall.result}`);

  const first = (JSON.parse(baseline.result) as number[][])[0]![0]!;
  const [from, to] = [Buffer.alloc(8), Buffer.alloc(8)];
  from.writeDoubleLE(first);
  to.writeDoubleLE(first / 10);
  const outAltered = { n: 0 };
  const outProxy = await tamperingProxy(target(a), { reply: (p) => replaceAll(p, from, to, outAltered) });
  const alteredReply = await through(outProxy.address);
  outProxy.close();
  log(
    `reply altered on its way back (${outAltered.n} places; the score ${first} made ${first / 10}): ${alteredReply.accepted ? `taken: ${alteredReply.result}` : alteredReply.result}`,
  );

  const huge = await hugeRuns(a);
  const result = { commit, model, bytes, baseline, recorded, replays, alteredCall, alteredReply, huge };
  writeRawResult(`engine-port-${commit}`, result);

  const verdict = (accepted: boolean): string => (accepted ? '**accepted**' : 'refused');
  const body = [
    `Commit ${commit}, ${model}, two \`arbitra engine --listen\` nodes of one thread on loopback, the attacks of \`test/helpers/engine-port-attacks.ts\`.`,
    '',
    `| unproven Score call of ${bytes / 1e6} MB | answered after | status | bytes the engine read | engine RSS before | RSS growth (1 s after) | peak growth |`,
    '|---|---|---|---|---|---|---|',
    ...huge.map(
      (h, i) =>
        `| run ${i + 1} | ${h.answeredAfterMs} ms | ${h.status ?? 'none'} | ${h.engineReadBytes.toLocaleString('en-US')} | ${h.rssBeforeMiB.toFixed(0)} MiB | ${h.rssGrowthMiB.toFixed(1)} MiB | ${h.peakGrowthMiB.toFixed(1)} MiB |`,
    ),
    '',
    '| a call recorded on the network, sent again | |',
    '|---|---|',
    `| to the engine that answered it | ${verdict(replays.sameEngine)} |`,
    `| to a sibling engine of the same secret | ${verdict(replays.sibling)} |`,
    `| to the engine that answered it, restarted since | ${verdict(replays.restarted)} |`,
    `| altered on its way in ("parcel" made "pencil") | ${verdict(alteredCall.accepted)}${alteredCall.accepted ? '' : `: ${alteredCall.result}`} |`,
    `| its reply altered on the way back (a log-prob divided by 10) | ${alteredReply.accepted ? `**taken**: ${alteredReply.result} for ${baseline.result}` : `refused: ${alteredReply.result}`} |`,
  ].join('\n');
  publishSection(common.resultsFile, 'Engine port (`npm run bench:engine-port`)', body, log);
} finally {
  await Promise.all([a.stop(), b.stop()]);
}
