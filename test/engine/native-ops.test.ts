// Single ops on the CPU backend with the engine's batch-invariant kernels, no model
// (native/tests/op_invariance_test.cc, built with the addon): a matrix product of each weight type
// the catalogue serves gives a row the same bits in every batch, at every place in it and on any
// number of threads; flash attention gives a row the same bits whatever other sequences' cells share
// its cache, in whatever order, wherever the cache is cut and whatever rows share its batch. Each
// of its tests is one assertion here; the device call runs the same binary on CUDA.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/paths.js';

const binary = path.join(packageRoot(), 'build', 'Release', 'arbitra-op-test');

if (!fs.existsSync(binary)) {
  t.fail(`${binary} is missing: npm install (or npm run build:addon) builds it with the addon`);
} else {
  const run = spawnSync(binary, { encoding: 'utf8', timeout: 300_000 });
  const lines = run.stdout.split('\n');
  const results = lines.filter((l) => /^(not )?ok /.test(l));
  t.ok(results.length >= 8, `the op tests ran (${results.length} of them)`);
  for (const line of results) {
    const name = line.replace(/^(not )?ok /, '');
    const why = lines.filter((l) => l.startsWith(`  FAIL ${name}:`) || l.startsWith(`# ${name}:`)).join('\n');
    t.ok(line.startsWith('ok '), name + (why ? `\n${why}` : ''));
  }
  t.equal(run.status, 0, `the binary exits 0${run.stderr ? `\n${run.stderr.slice(-4000)}` : ''}`);
}
