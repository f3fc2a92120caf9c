// The CPU backend's variants on a real `arbitra serve`: the server pinned to each variant this
// processor runs loads that one, says so at start-up, in /health, in /metrics and in a decision's
// meta.runtime, and its check at load holds the promise on it (each variant is its own arithmetic,
// so each is checked). Two variants need not agree with each other: how far apart they are is
// reported, not asserted. A variant the build does not carry is refused with the ones it does.
import t from 'tap';
import { loadAddon } from '../../src/engine/native.js';
import { cannotRun, metricValue, startServer } from './helpers/server.js';

const DECISION = {
  state: 'The parcel arrived two weeks late and the box was crushed.',
  questions: {
    late: { instructions: 'Did the parcel arrive late?' },
    tone: { type: 'choice', instructions: 'The tone of the message?', criteria: { angry: null, neutral: null, happy: null } },
  },
};

const variants = cannotRun ? [] : loadAddon().cpuVariants();
const runnable = variants.filter((v) => v.runnable).map((v) => v.name);

if (cannotRun) {
  t.plan(0, cannotRun);
} else if (runnable.length === 0) {
  t.plan(0, 'this build has its one CPU backend built in (ARBITRA_CPU_VARIANTS=0, or not an x86-64 build)');
} else {
  const answers = new Map<string, number[]>();

  for (const name of runnable) {
    t.test(`--cpu-variant ${name}: loaded, reported everywhere, and deterministic by its check at load`, async (t) => {
      const server = await startServer(t.testdir(), { workers: 1, args: ['--cpu-variant', name], env: { ARBITRA_DETERMINISM_CHECK: 'on' } });
      t.teardown(() => server.stop());
      const health = (await server.call('/health')).json;
      t.match(
        health.engines,
        [{ deterministic: true, path: { cpu_variant: name, cpu_variants: runnable, cpu_products: 'arbitra', covered: true } }],
        "/health, and the check's verdict",
      );
      const key = await server.createKey(`${name}@example.com`);
      const reply = await server.call('/v1/systemone', { body: DECISION, key: key.secret });
      t.equal(reply.status, 200);
      t.equal(reply.json.meta.runtime.cpu_variant, name, 'meta.runtime');
      const again = await server.call('/v1/systemone', { body: DECISION, key: key.secret });
      t.same(again.json.answers, reply.json.answers, 'the same bits on the same variant');
      const metrics = (await server.call('/metrics')).text;
      t.equal(metricValue(metrics, 'arbitra_engine_cpu_variant', { engine: '0', variant: name }), 1, '/metrics');
      const said = new RegExp(
        `path: exact kernels, .*CPU variant ${name} \\(of ${runnable.join(', ')} on this processor\\), the engine's own int8 products on the CPU$`,
        'm',
      );
      t.match(await server.logged(said), said, 'the start-up line');
      answers.set(name, [reply.json.answers.late.noul, ...Object.values(reply.json.answers.tone.probabilities as Record<string, number>)]);
    });
  }

  t.test("ARBITRA_INT8_KERNELS=off: llama.cpp's products run, and the engine says so", async (t) => {
    const server = await startServer(t.testdir(), { workers: 1, env: { ARBITRA_INT8_KERNELS: 'off', ARBITRA_DETERMINISM_CHECK: 'off' } });
    t.teardown(() => server.stop());
    t.match((await server.call('/health')).json.engines, [{ path: { cpu_products: 'llama.cpp' } }], '/health');
    const said = /^.*path: exact kernels, .*, llama\.cpp's int8 products on the CPU$/m;
    t.match(await server.logged(said), said, 'the start-up line');
  });

  t.test('a variant the build does not carry: the server does not start, and says which it does', async (t) => {
    await t.rejects(
      startServer(t.testdir(), { workers: 0, args: ['--cpu-variant', 'pentium3'] }),
      new RegExp(`exited \\(1\\) before listening:\\n.*no CPU variant 'pentium3' in this build; it has ${variants[0]!.name}`),
    );
  });

  const unrunnable = variants.find((v) => !v.runnable);
  if (unrunnable) {
    t.test(`--cpu-variant ${unrunnable.name}, which this processor cannot run: refused with why`, async (t) => {
      await t.rejects(
        startServer(t.testdir(), { workers: 0, args: ['--cpu-variant', unrunnable.name] }),
        new RegExp(`this processor cannot run the CPU variant '${unrunnable.name}'`),
      );
    });
  }

  t.test('between variants: how far apart, reported', async (t) => {
    const [first, ...others] = [...answers.entries()];
    for (const [name, probabilities] of others) {
      const apart = Math.max(...probabilities.map((p, i) => Math.abs(p - first![1][i]!)));
      t.comment(`${first![0]} and ${name}: probabilities up to ${apart.toExponential(2)} apart`);
    }
    t.ok(answers.size === runnable.length, 'every variant answered');
  });
}
