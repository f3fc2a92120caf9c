// The CPU products' activation quantizer (native/tests/quantize_test.cc, built with the addon on
// x86-64): byte for byte ggml's reference on random rows, ties, equal magnitudes of both signs and
// zero blocks. Each of its tests is one assertion here.
import t from 'tap';
import { runNativeTests } from './native-binary.js';

runNativeTests(t, 'arbitra-quantize-test', { atLeast: 4, timeoutMs: 60_000 });
