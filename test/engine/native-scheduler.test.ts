// The scorer's scheduler in C++ without a model (native/tests/scheduler_test.cc, built with the
// addon, under AddressSanitizer and UBSan where the compiler has them): fairness within and across
// tenants, prefix references released exactly once, sequences never lost, cancellation and failed
// decodes, the liveness clock and the injected stall. Each of its tests is one assertion here.
import t from 'tap';
import { runNativeTests } from './native-binary.js';

runNativeTests(t, 'arbitra-scheduler-test', { atLeast: 11, timeoutMs: 120_000 });
