// `--gpus 0,1`: one engine process per device, each shown only its own GPU (CUDA_VISIBLE_DEVICES);
// requests spread over both, a state asked again goes to the engine that cached it, an answer does
// not depend on which engine gave it, and a killed engine's requests are taken by the other while it
// restarts. On this CPU build both engines run on the CPU, which is enough to prove all of that.
import fs from 'node:fs';
import t from 'tap';
import { cannotRun, metricValue, startServer, type Server } from '../integration/helpers/server.js';
import { serveChildren } from './processes.js';

const QUESTION = { instructions: 'Does the customer ask for money back?' };
const RESTART_WITHIN_MS = 60_000;

function body(state: string) {
  return { state, questions: { refund: QUESTION }, options: { return_raw_probabilities: true } };
}

/** Engine pids by the device their process was shown. */
function enginesByDevice(primary: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of serveChildren(primary).filter((c) => c.engine)) {
    const env = fs.readFileSync(`/proc/${c.pid}/environ`, 'utf8').split('\0');
    out.set(env.find((e) => e.startsWith('CUDA_VISIBLE_DEVICES='))?.slice('CUDA_VISIBLE_DEVICES='.length) ?? '(unset)', c.pid);
  }
  return out;
}

async function branchesByEngine(server: Server): Promise<[number, number]> {
  const text = (await server.call('/metrics')).text;
  return [0, 1].map((e) => metricValue(text, 'arbitra_engine_branches_scored_total', { engine: String(e) }) ?? -1) as [number, number];
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else if (process.platform !== 'linux') {
  t.plan(0, "reads the engines' environment from /proc");
} else {
  const server = await startServer(t.testdir(), {
    workers: 2,
    // Two model copies on two cores: one thread each, and small caches. No self-test: it scores on
    // engine 0 in the background, which the per-engine counts below would take for placement.
    env: {
      ARBITRA_GPUS: '0,1',
      ARBITRA_THREADS: '1',
      ARBITRA_CTX_SIZE: '1024',
      ARBITRA_MAX_SEQUENCES: '8',
      ARBITRA_LONG_CTX_SIZE: '0',
    },
  });
  t.teardown(() => server.stop());
  const { secret } = await server.createKey('gpus@example.com');
  const decide = (state: string) => server.call('/v1/systemone', { body: body(state), key: secret, fresh: true });

  t.test('one engine process per listed device, each shown only its own', async (t) => {
    const engines = enginesByDevice(server.pid);
    t.same([...engines.keys()].sort(), ['0', '1'], 'CUDA_VISIBLE_DEVICES=0 and =1');
    t.match(server.log(), /^arbitra listening on .*, 2 engines, 2 workers/m, 'the listening line counts the engines');
    const where = /this build has no GPU backend: --gpus 0,1 runs 2 engines on the CPU/;
    t.match(await server.logged(where), where, 'and says where they run');
    const health = await server.call('/health');
    t.equal(health.status, 200);
    // The suite's servers skip the determinism check (test/integration/helpers/server.ts): not checked is
    // null, on the covered path each engine resolved (exact kernels, flash attention on, the CPU's own gather).
    // Both engines' processes loaded the same CPU variant, the best this processor runs.
    const { cpu_variant, cpu_variants, cpu_products } = health.json.engines[0].path;
    t.equal(cpu_variant, cpu_variants[0] ?? 'built-in', 'the best variant this processor runs');
    const unchecked = {
      kernels: 'exact',
      deterministic: null,
      max_difference: null,
      path: { flash_attention: true, kv_gather: false, cpu_variant, cpu_variants, cpu_products, covered: true, uncovered: [] },
    };
    t.same(health.json.engines, [
      { engine: 0, device: 0, status: 'ready', ...unchecked },
      { engine: 1, device: 1, status: 'ready', ...unchecked },
    ]);
    const metrics = (await server.call('/metrics')).text;
    t.equal(metricValue(metrics, 'arbitra_engine_up', { engine: '0' }), 1, 'engine 0 up in /metrics');
    t.equal(metricValue(metrics, 'arbitra_engine_up', { engine: '1' }), 1, 'engine 1 up in /metrics');
  });

  t.test('different states spread over both engines', async (t) => {
    const before = await branchesByEngine(server);
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => decide(`Ticket ${i}: the parcel with order ${1000 + i * 37} arrived broken.`)));
    t.same(
      replies.map((r) => r.status),
      Array(12).fill(200),
    );
    const after = await branchesByEngine(server);
    t.ok(after[0] > before[0] && after[1] > before[1], `both engines scored (${after[0] - before[0]} and ${after[1] - before[1]} branches)`);
  });

  const STATE = 'Ticket 9001: I was charged twice for the same jacket and want one payment returned.';
  let first: any;
  let home = -1;

  t.test('a state asked again goes to the engine that cached it', async (t) => {
    const before = await branchesByEngine(server);
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await decide(STATE));
    t.same(
      replies.map((r) => r.status),
      [200, 200, 200, 200],
    );
    const after = await branchesByEngine(server);
    const grew = [0, 1].filter((e) => after[e]! > before[e]!);
    t.equal(grew.length, 1, `one engine took all four (branches ${before.join(', ')} -> ${after.join(', ')})`);
    home = grew[0]!;
    first = replies[0]!.json.answers.refund;
    for (const r of replies.slice(1)) t.same(r.json.answers.refund, first, 'the same answer each time');
  });

  t.test("a killed engine's requests go to the other, which answers the same, and it comes back", async (t) => {
    const pid = enginesByDevice(server.pid).get(String(home))!;
    process.kill(pid, 'SIGKILL');
    const during = await decide(STATE);
    t.equal(during.status, 200, 'answered while its home engine is gone');
    t.same(during.json.answers.refund, first, 'by the other engine, with the same probabilities to the last digit');
    const health = await server.call('/health');
    t.equal(health.status, 200, '/health stays 200 while one engine serves');
    t.not(health.json.engines[home].status, 'ready', `and shows engine ${home} ${health.json.engines[home].status}`);

    let back = false;
    for (const end = Date.now() + RESTART_WITHIN_MS; !back && Date.now() < end; ) {
      back = (await server.call('/health')).json.engines.every((e: { status: string }) => e.status === 'ready');
      if (!back) await new Promise((r) => setTimeout(r, 250));
    }
    t.ok(back, 'both engines ready again');
    t.not(enginesByDevice(server.pid).get(String(home)), pid, 'a new process, on the same device');
    const metrics = (await server.call('/metrics')).text;
    t.equal(metricValue(metrics, 'arbitra_engine_restarts_total', { engine: String(home) }), 1, 'its restart is counted under its label');
    t.equal(metricValue(metrics, 'arbitra_engine_restarts_total', { engine: String(1 - home) }), 0, "and not under the other's");
    const again = await decide(STATE);
    t.equal(again.status, 200);
    t.same(again.json.answers.refund, first, 'the restarted home engine answers the same');
  });
}
