// Single ops on the CPU backend with the engine's batch-invariant kernels, no model
// (native/tests/op_invariance_test.cc, built with the addon): a matrix product of each weight type
// the catalogue serves gives a row the same bits in every batch, at every place in it and on any
// number of threads; flash attention gives a row the same bits whatever other sequences' cells share
// its cache, in whatever order, wherever the cache is cut and whatever rows share its batch, and its
// rows are attention (against a double-precision reference, with several query heads per KV head).
// Each of its tests is one assertion here; the device call runs the same binary on CUDA.
import t from 'tap';
import { runNativeTests } from './native-binary.js';

runNativeTests(t, 'arbitra-op-test', { atLeast: 9, timeoutMs: 300_000 });
