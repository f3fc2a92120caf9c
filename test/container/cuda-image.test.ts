// The CUDA image (scripts/container/images.mjs --backend cuda), started without a GPU or NVIDIA
// driver, as on a machine with no GPU or a container given none: it serves on the CPU addon it
// carries, says why in one start-up line, and answers a decision. scripts/container/test.mjs does not
// build it (about an hour of CUDA compile on 2 cores); name a built one to run this file:
//
//   ARBITRA_TEST_CUDA_IMAGE=localhost/arbitra:cuda npx tap test/container/cuda-image.test.ts
import t from 'tap';
import { decisionBody } from '../../bench/lib/bodies.js';
import { freePort } from '../../bench/lib/serve.js';
import { packageRoot } from '../../src/paths.js';
import { createKey, decide, inspectImage, podman, runContainer, uniqueName, waitHealthy } from './podman.js';

const IMAGE = process.env.ARBITRA_TEST_CUDA_IMAGE;
/** The goal of issue 52: the CUDA libraries (cuBLAS alone is most of it) and one GPU architecture's kernels, without a model. */
const MAX_IMAGE_BYTES = 2.5e9;
const SERVE = ['serve', '--model', 'gemma-3-270m-q4_k_m', '--workers', '1', '--max-sequences', '8', '--long-ctx-size', '0'];
const START_MS = 180_000;

if (!IMAGE) {
  t.plan(0, 'ARBITRA_TEST_CUDA_IMAGE names no CUDA image');
} else {
  t.test("the CUDA image: under 2.5 GB, no model, both addons and the CPU one's variants", async (t) => {
    const image = await inspectImage(IMAGE);
    t.ok(image.Size < MAX_IMAGE_BYTES, `${(image.Size / 1e6).toFixed(0)} MB < ${MAX_IMAGE_BYTES / 1e6} MB`);
    t.equal(image.Labels['io.arbitra.backend'], 'cuda');
    const ls = (dir: string) => podman(['run', '--rm', '--network', 'host', '--no-healthcheck', '--entrypoint', 'ls', IMAGE, '-A', dir]);
    const files = (await ls('/opt/arbitra/build/Release')).stdout.trim().split('\n');
    t.same(files.filter((f) => f.endsWith('.node')).sort(), ['arbitra-cpu.node', 'arbitra.node'], 'the CUDA addon and the CPU one beside it');
    t.ok(files.includes('libggml-cpu-haswell.so'), `the CPU addon's x86-64-v3 variant beside it: ${files.join(' ')}`);
    t.equal((await ls('/var/lib/arbitra/models')).stdout.trim(), '', 'no model is baked in');
  });

  t.test('started without a GPU: one line says why, and it serves a decision on the CPU', async (t) => {
    const port = await freePort();
    const container = await runContainer({
      image: IMAGE,
      name: uniqueName('cuda'),
      port,
      env: { ARBITRA_SELF_TEST: 'off', ARBITRA_DETERMINISM_CHECK: 'off' },
      volumes: [`${packageRoot()}/models:/var/lib/arbitra/models:ro`],
      args: SERVE,
    });
    t.teardown(() => container.remove());
    await waitHealthy(container, START_MS);
    const logs = await container.logs();
    const fallback = logs.split('\n').filter((line) => line.includes('serving on the CPU (arbitra-cpu.node)'));
    t.equal(fallback.length, 1, `one line says it serves on the CPU:\n${logs.slice(-3000)}`);
    t.match(fallback[0], /^no CUDA driver found \(libcuda\.so\.1 is not installed\): /, 'and why: no driver in a container given no GPU');
    t.match(logs, /backend cpu/, 'the start-up line names the backend it serves on');
    const key = await createKey(container, 'ops@example.com');
    const answered = await decide(container, key, decisionBody('small', 1));
    t.equal(answered.status, 200, answered.text.slice(0, 300));
    const body = JSON.parse(answered.text) as { answers: Record<string, unknown>; meta: { runtime: { backend: string } } };
    t.ok(body.answers.late, 'answered the question asked');
    t.equal(body.meta.runtime.backend, 'cpu', 'and says which backend answered it');
  });
}
