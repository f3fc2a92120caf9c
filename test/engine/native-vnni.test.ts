// The CPU products' VNNI path against their AVX2 path (native/tests/vnni_test.cc, built with the
// addon on x86-64): every weight type's kernel with vpdpbusd emulated exactly, and on this
// processor's own vpdpbusd where it has AVX-512 VNNI, the same bits as AVX2's, with 1, 4 and 8
// activation rows a call. Each of its tests is one assertion here.
import t from 'tap';
import { runNativeTests } from './native-binary.js';

runNativeTests(t, 'arbitra-vnni-test', { atLeast: 9, timeoutMs: 60_000 });
