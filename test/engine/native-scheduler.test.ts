// The scorer's scheduler in C++ without a model (native/tests/scheduler_test.cc, built with the
// addon, under AddressSanitizer and UBSan where the compiler has them): fairness within and across
// tenants, prefix references released exactly once, sequences never lost, cancellation and failed
// decodes, the liveness clock and the injected stall. Each of its tests is one assertion here.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/paths.js';

const binary = path.join(packageRoot(), 'build', 'Release', 'arbitra-scheduler-test');

if (!fs.existsSync(binary)) {
  t.fail(`${binary} is missing: npm install (or npm run build:addon) builds it with the addon`);
} else {
  const run = spawnSync(binary, { encoding: 'utf8', timeout: 120_000 });
  const lines = run.stdout.split('\n');
  const results = lines.filter((l) => /^(not )?ok /.test(l));
  t.ok(results.length >= 11, `the scheduler tests ran (${results.length} of them)`);
  for (const line of results) {
    const name = line.replace(/^(not )?ok /, '');
    const why = lines.filter((l) => l.startsWith(`  FAIL ${name}:`)).join('\n');
    t.ok(line.startsWith('ok '), name + (why ? `\n${why}` : ''));
  }
  t.equal(run.status, 0, `the binary exits 0${run.stderr ? `\n${run.stderr.slice(-4000)}` : ''}`);
}
