// The CPU variants' device call on this machine (`npm run test:device`): scripts/cpu-variants-bench.sh
// builds native/tools as a variants build and a native llama-bench beside it, then holds every
// variant this processor runs to its op test and its exact determinism columns, and measures each
// one's prefill with our products and with llama.cpp's. On a processor without AVX-512 `zen4` is
// built and refused; the device tool's host runs it (bench/RESULTS.md).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/paths.js';
import { TEST_MODEL } from '../helpers/models.js';
import { pack, type ScorerLine } from './pipeline.js';

t.test('cpu-variants-bench.sh holds and measures every variant this processor runs', async (t) => {
  t.equal(pack().status, 0, 'packed .device/');
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-cpu-variants-out-'));
  const r = spawnSync('bash', ['scripts/cpu-variants-bench.sh'], {
    cwd: packageRoot(),
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, MODEL: TEST_MODEL, THREADS: '2', DEADLINE: '5400', OUT: out, WORK: path.join(os.tmpdir(), 'arbitra-cpu-variants-test') },
  });
  const files = Object.fromEntries(fs.readdirSync(out).map((f) => [f, fs.readFileSync(path.join(out, f), 'utf8')]));
  fs.rmSync(out, { recursive: true, force: true });
  const summary = files['summary.txt'] ?? '';
  t.equal(r.status, 0, summary);
  t.match(summary, /^built native\/tools \(variants: haswell zen4 \) and native llama-bench \(status 0\)/m);
  t.match(summary, /^haswell: op test ok$/m);
  t.match(summary, /^zen4: (op test ok|not on this processor)$/m);
  // ggml's own stderr line (load_backend) may come between, as the script sends both to the file
  t.match(files['op-test.txt'], /^## cpu variant haswell$[^]*?^# cpu variant haswell$[^]*?^0 failure\(s\)$/m);

  let setup: ScorerLine = { bench: 'setup' };
  const prefill: string[] = [];
  const layouts = new Set<string>();
  for (const line of files['scorer.jsonl']!.trim().split('\n')) {
    const l = JSON.parse(line) as ScorerLine;
    t.notOk(l.error, `${l.bench}: ${l.error ?? 'no error'}`);
    if (l.bench === 'setup') setup = l;
    if (l.bench === 'determinism' && setup.cpu_variant === 'haswell') {
      layouts.add(setup.layout!);
      t.equal(l.max_abs_diff, 0, `haswell ${setup.layout} ${l.compare}`);
    }
    if (l.bench === 'prefill') {
      t.ok(l.prefix_tok_s! > 0, `${setup.cpu_variant} ${setup.cpu_products}: ${l.prefix_tok_s} tok/s`);
      prefill.push(`${setup.cpu_variant} ${setup.cpu_products}`);
    }
  }
  t.same([...layouts].sort(), ['copied', 'shared']);
  // ARBITRA_INT8_KERNELS=off hands every weight back to llama.cpp, and the run says so.
  t.same(
    prefill.filter((p) => p.startsWith('haswell')),
    ['haswell arbitra', 'haswell llama.cpp'],
  );
  t.equal(files['llama-bench.jsonl']!.trim().split('\n').length, 2, 'native llama-bench before and after');
  t.match(summary, /^prefill, haswell, arbitra products: [\d.]+ tok\/s \([\d.]+x native llama-bench\)$/m);
});
