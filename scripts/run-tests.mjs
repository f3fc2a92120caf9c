#!/usr/bin/env node
// Runs the suite by tiers (scripts/lib/test-tiers.mjs). `npm test`: first, four at a time, the
// files that load no model (the fast tier, and the PostgreSQL tests, which mostly wait); then two at
// a time the files that do; one summary line for both at the end. `--fast` (`npm run test:fast`):
// the fast tier alone, its store contracts on LMDB alone. `--container` or `--device`: that tier of
// its own alone, one file at a time (what `npm run test:container` runs once its images are built,
// and `npm run test:device`). `--list`: each file's tier and what it starts. Other arguments go to tap.
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { onlyPostgres, ownTier, root, tierOf, tiers } from './lib/test-tiers.mjs';

// Those files wait on disks and PostgreSQL start-ups as much as on the CPU: on 2 cores the fast tier
// with PostgreSQL took 54 s two at a time, 49 s three at a time and 47 s four at a time.
const JOBS = 4;
// One model file alone kept 1.5 of 2 cores busy on average: its engine waits on HTTP, on kills and
// restarts, on leases and store bounds. Two at a time took the tier from 766 s to 506 s on 2 cores
// once ggml's barrier sleeps instead of spinning (native/patches/ggml-cpu-barrier-sleep.patch);
// before it, two engines' spinning threads stalled each other, each file took 2-4 times as long
// and timing tests failed.
const MODEL_JOBS = 2;
const args = process.argv.slice(2);
const files = tiers();
if (args.includes('--list')) {
  for (const [file, what] of files) console.log(`${tierOf(what).padEnd(9)} ${file}${what.length ? ` (${what.join(', ')})` : ''}`);
  process.exit(0);
}
const fastOnly = args.includes('--fast');
const ownOnly = ['container', 'device'].find((tier) => args.includes(`--${tier}`));
const tapArgs = args.filter((a) => a !== '--fast' && a !== `--${ownOnly}`);
const where = (test) => [...files].filter(([, what]) => test(what)).map(([file]) => file);
const loadsNoModel = (what) => what.length === 0 || onlyPostgres(what);
const fast = where((what) => what.length === 0);
const modelFree = where(loadsNoModel);
const withModels = where((what) => !loadsNoModel(what) && !ownTier(what));

/** Runs tap over `list`, passing its output through; resolves with its exit status and its summary counts. */
function tap(list, jobs, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'node_modules/tap/dist/esm/run.mjs'), `--jobs=${jobs}`, ...tapArgs, ...list], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env },
    });
    let counts = {};
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      process.stdout.write(`${line}\n`);
      const summary = /^# \{ (total: \d+.*) \}$/.exec(line);
      if (summary) counts = Object.fromEntries(summary[1].split(', ').map((kv) => [kv.split(': ')[0], Number(kv.split(': ')[1])]));
    });
    child.on('close', (code) => resolve({ code: code ?? 1, counts }));
  });
}

if (ownOnly) {
  const list = where((what) => ownTier(what) === ownOnly);
  console.log(`test:${ownOnly}: ${list.length} files of the ${ownOnly} tier, one at a time`);
  process.exit((await tap(list, 1)).code);
}
if (fastOnly) {
  console.log(`test:fast: ${fast.length} of ${files.size} test files (the others start a model, a server, PostgreSQL or a browser: npm test runs them)`);
  process.exit((await tap(fast, JOBS, { ARBITRA_TEST_BACKENDS: 'lmdb' })).code);
}
console.log(`${modelFree.length} files that load no model, ${JOBS} at a time`);
const first = await tap(modelFree, JOBS);
console.log(`${withModels.length} files that load a model, ${MODEL_JOBS} at a time`);
const second = await tap(withModels, MODEL_JOBS);
// The line .ci/run reads: both runs' counts together.
const keys = [...new Set([...Object.keys(first.counts), ...Object.keys(second.counts)])];
console.log(`# { ${keys.map((k) => `${k}: ${(first.counts[k] ?? 0) + (second.counts[k] ?? 0)}`).join(', ')} }`);
process.exit(first.code || second.code);
