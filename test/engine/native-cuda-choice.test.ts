// The CUDA backend's kernel choices, compiled for the host (native/tests/cuda_choice_test.cc, built
// with the addon from the patched llama.cpp): batch-invariant, flash attention's GQA packing follows
// the model alone, never the KV length in use. Each of its tests is one assertion here.
import t from 'tap';
import { runNativeTests } from './native-binary.js';

runNativeTests(t, 'arbitra-cuda-choice-test', { atLeast: 4, timeoutMs: 30_000 });
