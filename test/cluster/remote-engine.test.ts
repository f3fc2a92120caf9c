// API nodes and engines apart: `arbitra serve --engines` scoring on `arbitra engine --listen` nodes
// over TCP. Real processes on loopback: decisions work and /metrics shows the remote engine's
// counters; a node with the wrong secret or another model is refused and answers 503 with
// Retry-After; an engine whose arithmetic differs from the other's is not used; with two engines,
// one's death costs no decision and it is taken back when it returns; with none left, 503 until
// one is back.
import t from 'tap';
import { cannotRun, metricValue, startEngineNode, startServer, until, type EngineNode, type Server } from '../integration/helpers/server.js';

const SECRET = { ARBITRA_ENGINE_SECRET: 'remote-engine-test-secret-0123' };
const BODY = { state: 'The parcel arrived broken and I want my money back.', questions: { refund: { instructions: 'Does the customer want a refund?' } } };
async function engineStatuses(server: Server): Promise<string[]> {
  return (await server.call('/health')).json.engines.map((e: { status: string }) => e.status);
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  // The first engine checks determinism at load, which the first test reads through the API node.
  // Both load at once: each runs one thread, so on two cores neither waits for the other.
  const engines: EngineNode[] = await Promise.all([startEngineNode({ ...SECRET, ARBITRA_DETERMINISM_CHECK: 'on' }), startEngineNode(SECRET)]);
  t.teardown(() => Promise.all(engines.map((e) => e.stop())));
  const dir = t.testdir();
  const start = (env: Record<string, string>, list = engines.map((e) => `127.0.0.1:${e.port}`).join(','), args: string[] = []) =>
    startServer(dir, { workers: 2, env: { ...env, ARBITRA_ENGINES: list }, args });

  t.test('one engine: decisions, /health and /metrics through a remote engine', async (t) => {
    const server = await start(SECRET, `127.0.0.1:${engines[0]!.port}`);
    t.teardown(() => server.stop());
    t.match(server.log(), /^arbitra listening on .*backend remote/m, 'the API node loads no model of its own');
    t.ok(await until(async () => (await server.call('/health')).status === 200), '/health turns 200 once the engine is connected');
    t.match((await server.call('/health')).json.engines, [
      { engine: 0, device: null, status: 'ready', kernels: 'exact', deterministic: true, max_difference: 0 },
    ]);
    const { secret } = await server.createKey('remote@example.com');
    const reply = await server.call('/v1/systemone', { body: BODY, key: secret, fresh: true });
    t.equal(reply.status, 200, reply.text);
    t.equal(reply.json.model, 'gemma-3-270m-q4_k_m');
    const metrics = (await server.call('/metrics')).text;
    t.equal(metricValue(metrics, 'arbitra_engine_up', { engine: '0' }), 1);
    t.equal(metricValue(metrics, 'arbitra_engine_deterministic', { engine: '0' }), 1, "the engine's check at load held");
    t.ok((metricValue(metrics, 'arbitra_engine_tokens_evaluated_total', { engine: '0' }) ?? 0) > 0, "the engine node's counters, read over its socket");
    t.equal(metricValue(metrics, 'arbitra_engine_wedged', { engine: '0' }), 0, 'the engine is live');
    t.ok((metricValue(metrics, 'arbitra_store_operation_seconds_count', { operation: 'keys.verify' }) ?? 0) >= 1, 'store calls are timed per operation');
  });

  t.test('a node with the wrong secret, or serving another model, is refused; it answers 503', async (t) => {
    // Both refused nodes at once: each waits on its start and its engine's refusal, not on the CPU.
    const refused = [
      ['wrong secret', { ARBITRA_ENGINE_SECRET: 'not-the-engine-secret-0123' }, [], /the engine refused this node: wrong engine secret/],
      [
        'another model',
        SECRET,
        ['--model', '/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf'],
        /it serves the model gemma-3-270m-q4_k_m, this node serves qwen2\.5-coder-1\.5b-instruct-q4_k_m; not used/,
      ],
    ] as const;
    await Promise.all(
      refused.map(async ([what, env, args, why]) => {
        const server = await start(env, `127.0.0.1:${engines[0]!.port}`, [...args]);
        t.match(await server.logged(why), why, `${what}: the API node says why`);
        const health = await server.call('/health');
        t.equal(health.status, 503, `${what}: /health 503`);
        t.notMatch(JSON.stringify(health.json), /127\.0\.0\.1|tcp:\/\//, `${what}: /health says why without where the engine listens`);
        const { secret } = await server.createKey('refused@example.com');
        const reply = await server.call('/v1/systemone', { body: BODY, key: secret });
        t.equal(reply.status, 503, `${what}: decisions 503`);
        t.ok(Number(reply.headers.get('retry-after')) > 0, `${what}: with Retry-After`);
        await server.stop();
      }),
    );
    t.match(engines[0]!.log(), /engine: refused 127\.0\.0\.1:\d+: wrong engine secret/, 'the engine logs the refusal too');
  });

  t.test('two engines: one dies, no decision fails; it returns and is used again; none left is 503', async (t) => {
    const server = await start(SECRET);
    t.teardown(() => server.stop());
    t.ok(await until(async () => (await engineStatuses(server)).every((s) => s === 'ready')), 'both engines ready');
    const { secret } = await server.createKey('two@example.com');
    const decide = (state: string) => server.call('/v1/systemone', { body: { ...BODY, state }, key: secret, fresh: true });
    const first = await decide(BODY.state);

    const dead = engines[0]!;
    await dead.kill9();
    const during = await Promise.all(Array.from({ length: 6 }, (_, i) => decide(i === 0 ? BODY.state : `${BODY.state} (${i})`)));
    t.same(
      during.map((r) => r.status),
      Array(6).fill(200),
      'every decision answered by the engine left',
    );
    t.same(during[0]!.json.answers.refund, first.json.answers.refund, 'the same answer from the other engine');
    t.ok(await until(async () => (await engineStatuses(server))[0] === 'down'), 'the dead engine shows down');
    t.equal((await server.call('/health')).status, 200, '/health stays 200 while one engine serves');

    engines[0] = await startEngineNode(SECRET, { port: dead.port });
    t.ok(await until(async () => (await engineStatuses(server))[0] === 'ready'), 'the returning engine is taken back');
    t.equal(metricValue((await server.call('/metrics')).text, 'arbitra_engine_restarts_total', { engine: '0' }), 1, 'its return is counted');
    const before = metricValue((await server.call('/metrics')).text, 'arbitra_engine_branches_scored_total', { engine: '0' })!;
    const spread = await Promise.all(Array.from({ length: 10 }, (_, i) => decide(`Order ${i * 97}: the box was empty.`)));
    t.same(
      spread.map((r) => r.status),
      Array(10).fill(200),
    );
    const after = metricValue((await server.call('/metrics')).text, 'arbitra_engine_branches_scored_total', { engine: '0' })!;
    t.ok(after > before, `it scores again (${after - before} branches)`);

    await Promise.all(engines.map((e) => e.kill9()));
    t.ok(await until(async () => (await server.call('/health')).status === 503), 'no engine left: /health 503');
    const none = await decide(BODY.state);
    t.equal(none.status, 503, 'decisions 503');
    t.equal(none.json.detail.error_type, 'service_unavailable');
    t.ok(Number(none.headers.get('retry-after')) > 0, 'with Retry-After');
    [engines[0], engines[1]] = await Promise.all([startEngineNode(SECRET, { port: engines[0].port }), startEngineNode(SECRET, { port: engines[1]!.port })]);
    t.ok(await until(async () => (await decide(BODY.state)).status === 200), 'decisions again once engines are back');
  });

  t.test('an engine whose arithmetic differs from the others is refused: which engine answers may not move a bit', async (t) => {
    // Fast kernels stand for any difference of arithmetic (another CPU variant needs another processor).
    const fast = await startEngineNode({ ...SECRET, ARBITRA_KERNELS: 'fast' });
    t.teardown(() => fast.stop());
    const server = await start(SECRET, `127.0.0.1:${engines[1]!.port},127.0.0.1:${fast.port}`);
    t.teardown(() => server.stop());
    // whichever engine connected first sets the arithmetic; the other is refused
    const why =
      /its arithmetic \(cpu backend, (exact|fast) kernels, [^)]*CPU variant [^)]*\) differs from the other engines' \(cpu backend, (fast|exact) kernels, [^)]*\), so an answer would depend on which engine gave it; give every engine the same --kernels, --flash-attention and --cpu-variant/;
    t.match(await server.logged(why), why, 'the API node says why, and how to mend it');
    t.ok(await until(async () => (await engineStatuses(server)).sort().join() === 'down,ready'), 'one engine serves, the other is not used');
    const { secret } = await server.createKey('arithmetic@example.com');
    const reply = await server.call('/v1/systemone', { body: BODY, key: secret, fresh: true });
    t.equal(reply.status, 200, 'decisions go to the engine that was kept');
  });
}
