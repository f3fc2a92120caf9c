// The device call end to end on the CPU (`npm run test:device`): the pack stays under its limit
// with everything the GPU machine needs, and scripts/gpu-bench.sh with GPU=0 builds the addon,
// llama-server and the tools from it, then runs every step within its deadline and leaves results
// the device tool can bring back. The cheap checks of the same scripts are in the fast tier
// (test/scripts/device-pack.test.ts).
import t from 'tap';
import { PACK_FILES } from '../../scripts/device-pack.mjs';
import { API_CONCURRENCY, pack, packed, runPipeline, type ScorerLine } from './pipeline.js';

t.test('the pack holds what the GPU machine needs and stays under the limit', async (t) => {
  const packed = pack();
  t.equal(packed.status, 0, packed.output.slice(-3000));
  const manifest = packed.manifest!;
  for (const f of Object.values(PACK_FILES)) t.ok(manifest.files[f]! > 0, `${f}: ${manifest.files[f]} bytes`);
  t.ok(manifest.travel.total < manifest.travel.limitMiB * 2 ** 20, `the device call carries ${(manifest.travel.total / 2 ** 20).toFixed(1)} MiB`);
});

t.test('gpu-bench.sh with GPU=0 runs every step and writes what the device tool brings back', async (t) => {
  const run = runPipeline();
  const summary = run.files['summary.txt'] ?? '';
  t.equal(run.status, 0, summary.slice(-3000));
  t.ok(Object.keys(run.files).length <= 8, `${Object.keys(run.files).join(', ')}: at most 8 files`);
  t.notMatch(summary, /skipped|FAILED/);
  // The verdict (scripts/lib/device-verdict.py) first: exact kernels' columns and the required op tests.
  t.equal(summary.split('\n')[0], 'deterministic', 'the verdict is the first line');
  t.match(summary, /op tests: ok/);
  t.match(run.files['op-test.txt'], /^# backend CPU \(CPU device\)\n[^]*^0 failure\(s\)$/m, "the op test's whole output comes back");
  t.match(run.files['op-test.txt'], /^ok .* \[every backend\]$[^]*^ok .* \[CPU only\]$/m, 'its cases tagged');
  // The verdict's tools first, the benches' in the background, waited for before bench:api.
  t.match(summary, /built the CPU arbitra-op-test arbitra-scorer-bench arbitra-synth-gguf in [^]*built arbitra llama-bench llama-server in \d+ s/);
  // the unpacked llama.cpp has no git history: the addon still names the commit it was built from
  const commit = packed()!.llamaCpp;
  t.match(summary, new RegExp(`addon: llama\\.cpp \\S+-${commit}\\b`), `the addon names llama.cpp ${commit}`);

  let kernels = '';
  let gathered = false;
  const determinism: string[] = [];
  for (const line of run.files['scorer.jsonl']!.trim().split('\n')) {
    const l = JSON.parse(line) as ScorerLine;
    t.notOk(l.error, `${l.bench} ${l.layout}: ${l.error ?? 'no error'}`);
    if (l.bench === 'setup') [kernels, gathered] = [l.kernels!, l.kv_gather === true];
    if (l.bench !== 'determinism') continue;
    determinism.push(`${l.layout} ${kernels}${gathered ? ' gathered' : ''}`);
    // The CPU's promise: exact kernels give the same bits however the probe is batched or cached.
    if (kernels === 'exact') t.equal(l.max_abs_diff, 0, `${l.layout} exact ${l.compare}`);
  }
  t.same([...new Set(determinism)].sort(), ['copied exact', 'copied fast', 'shared exact', 'shared exact gathered', 'shared fast']);
  t.match(run.files['scorer.jsonl'], /"bench":"prefill"/);
  t.ok(JSON.parse(run.files['llama-bench.json']!) instanceof Array, 'llama-bench wrote its JSON');

  const api = JSON.parse(run.files['api.json']!) as {
    sides: Array<{ name: string; engines?: Array<{ kernels: string | null; deterministic: boolean | null }> }>;
    rows: Array<{ workload: string; concurrency: number; results: Record<string, { completed: number; failed: number }> }>;
  };
  // Each of our engines' load-time check, as /health gave it, kept beside the figures: the exact
  // kernels' true on the CPU, the fast ones' checked (false as measured here, not asserted).
  const engines = Object.fromEntries(
    api.sides.map((s) => [s.name, s.engines?.map((e) => `${e.kernels} kernels, ${e.deterministic === null ? 'not checked' : 'checked'}`)]),
  );
  t.same(engines, { 'ours exact': ['exact kernels, checked'], 'ours fast': ['fast kernels, checked'], 'llama-server': undefined });
  t.equal(api.sides.find((s) => s.name === 'ours exact')?.engines?.[0]?.deterministic, true, 'exact kernels: deterministic');
  t.match(run.files['api.md'], /^- Load-time check and resolved path \(GET \/health, `engines\[\]`\): ours exact: engine 0: exact kernels, deterministic/m);
  t.same(
    api.rows.map((r) => `${r.workload}@${r.concurrency}`),
    ['a', 'b'].flatMap((w) => API_CONCURRENCY.split(',').map((c) => `${w}@${c}`)),
  );
  for (const row of api.rows) {
    t.same(Object.keys(row.results).sort(), ['llama-server', 'ours exact', 'ours fast'], `${row.workload}@${row.concurrency}`);
    for (const [side, r] of Object.entries(row.results))
      t.ok(r.completed > 0 && r.failed === 0, `${side} at ${row.workload}@${row.concurrency}: ${r.completed} ok, ${r.failed} failed`);
  }
  t.match(run.files['api.md'], /^## API/);
  t.comment(`gpu-bench.sh with GPU=0 took ${run.seconds.toFixed(0)} s`);
});
