// Single ops on the CPU backend with the engine's batch-invariant kernels, no model
// (native/tests/op_invariance_test.cc, built with the addon): a matrix product of each weight type
// the catalogue serves gives a row the same bits in every batch (batches of 1 to 130 rows cut from
// one pool, K 2,048 and N 512: several of the CPU's row groups, column blocks and K blocks), at
// every place in it and on any number of threads; flash attention gives a row the same bits
// whatever other sequences' cells share its cache, in position order or in any order, wherever the
// cache is cut and whatever rows share its batch, and its rows are attention (against a
// double-precision reference, with several query heads per KV head); a product on a repacked
// layout is the plain layout's to rounding (the quantized products are our own kernels,
// native/ggml-cpu). Each of its tests is one assertion here, its tag in the name: on the CPU the
// [CPU only] tests are required too. They run once per CPU variant this processor can execute
// (native/cpu_variant.cc), since each variant is its own arithmetic. The device call runs the same
// binary with --backend all --large (K 4,096, N 2,048, 1 to 512 rows), which on 2 cores would take
// minutes.
import t from 'tap';
import { loadAddon } from '../../src/engine/native.js';
import { runNativeTests } from './native-binary.js';

const variants = loadAddon().cpuVariants();
for (const { name } of variants.filter((v) => !v.runnable)) t.comment(`CPU variant ${name}: this processor cannot run it, so its op tests do not run here`);
const runnable = variants.filter((v) => v.runnable).map((v) => v.name);
if (runnable.length === 0) {
  runNativeTests(t, 'arbitra-op-test', { atLeast: 10, timeoutMs: 300_000 });
} else {
  for (const name of runnable) {
    t.test(`CPU variant ${name}`, async (t) => runNativeTests(t, 'arbitra-op-test', { atLeast: 10, timeoutMs: 300_000, args: ['--cpu-variant', name] }));
  }
}
