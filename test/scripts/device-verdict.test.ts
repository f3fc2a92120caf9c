// The device call's verdict (scripts/lib/device-verdict.py, python3 alone, as on the GPU machine)
// on small files shaped as the tools write them: the scorer bench's JSONL (native/tools/
// scorer_bench.cc: a setup record per run, then one determinism record per column) and the op
// test's output (native/tests/op_invariance_test.cc). Exact kernels' columns in both layouts and the
// required (CPU) op tests decide; fast kernels' columns and the GPU's op tests are only reported.
// Then gpu-bench.sh's VERDICT_ONLY mode: the verdict first in summary.txt and as the exit status.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/paths.js';

const root = packageRoot();
const COLUMNS = ['cold_vs_cached', 'alone_vs_batched', 'alone_vs_batched_cached', 'cold_vs_head_cached', 'copied_vs_shared'] as const;
type Column = (typeof COLUMNS)[number];

interface RunSpec {
  layout: 'shared' | 'copied';
  kernels: 'exact' | 'fast';
  /** The setup record's kv_gather: true only for a shared pool that gathers. */
  gather?: boolean;
  gpu?: boolean;
  /** max_abs_diff per column (0 unless given; null: not finite); a string: that column's error. */
  diffs?: Partial<Record<Column, number | null | string>>;
  /** Columns the run did not write. */
  without?: Column[];
  /** What the context resolved (the setup record's flash_attn_resolved, flash_attn_on_layer_device); true unless given. */
  resolved?: { flashAttention?: boolean; onLayerDevice?: boolean };
}

/** One scorer bench run's lines, keys in the order scorer_bench.cc writes them. */
function run(spec: RunSpec): string[] {
  const { layout, kernels, gpu = false } = spec;
  const setup = {
    bench: 'setup',
    layout,
    model: 'model-synth.gguf',
    arch: 'qwen2',
    quant: 'Q4_K_M',
    params: 1.54329e9,
    model_mib: 940.371,
    n_layer: 28,
    n_embd: 1536,
    n_vocab: 151936,
    n_ctx_train: 32768,
    kv_bytes_per_cell: 28672,
    cells: 4096,
    seqs: 64,
    gpu_layers: gpu ? 99 : 0,
    threads: 16,
    flash_attn: kernels === 'exact' ? 'on' : 'auto',
    kernels,
    flash_attn_resolved: spec.resolved?.flashAttention ?? true,
    flash_attn_on_layer_device: spec.resolved?.onLayerDevice ?? true,
    kv_gather: spec.gather ?? (layout === 'shared' && kernels === 'exact' && gpu),
    gpus: gpu ? 'CUDA0 NVIDIA H200' : '',
    gpu_model_mib: gpu ? 1012 : 0,
    load_ms: 812.4,
    quick: true,
  };
  const lines = [JSON.stringify(setup)];
  for (const compare of COLUMNS) {
    if (spec.without?.includes(compare)) continue;
    const given = spec.diffs?.[compare];
    const diff = given === undefined ? 0 : given; // not ?? 0: null is a difference
    const head = compare === 'cold_vs_head_cached' ? { head_tokens: 157, cached_tokens: 157 } : {};
    const common = {
      bench: 'determinism',
      layout,
      compare,
      prefix_tokens: 300,
      suffix_tokens: [3, 8, 17, 24],
      other_jobs: compare.startsWith('alone_vs_batched') ? 3 : 0,
      ...head,
    };
    if (typeof diff === 'string') {
      lines.push(JSON.stringify({ ...common, error: diff }));
      continue;
    }
    const branches = [0, 0, 0, diff];
    lines.push(JSON.stringify({ ...common, max_abs_diff: diff, 'within_1e-3': diff !== null && diff <= 1e-3, by_branch: branches }));
  }
  return lines;
}

/** The scorer bench's prefill record, which follows a prefill run's setup: no determinism column. */
const prefillRun = (layout: 'shared' | 'copied'): string[] => [
  run({ layout, kernels: 'exact' })[0]!,
  JSON.stringify({ bench: 'prefill', layout, prompts: 8, tokens: 512, ms: 1234.5, tok_s: 3318.2 }),
];

/** What gpu-bench.sh runs on the CPU (GPU=0): both layouts with both kernel sets, then the shared pool's gather forced on. */
function cpuCall(change: Partial<Record<string, Partial<RunSpec>>> = {}): string[] {
  const specs: Record<string, RunSpec> = {
    'shared exact': { layout: 'shared', kernels: 'exact' },
    'shared fast': { layout: 'shared', kernels: 'fast', diffs: { cold_vs_cached: 0.37, alone_vs_batched: 0.27, copied_vs_shared: 1.09 } },
    'copied exact': { layout: 'copied', kernels: 'exact' },
    'copied fast': { layout: 'copied', kernels: 'fast', diffs: { alone_vs_batched: 0.24 } },
    'shared exact gathered': { layout: 'shared', kernels: 'exact', gather: true },
  };
  const lines = Object.entries(specs).flatMap(([name, spec]) => (change[name] === undefined ? run(spec) : run({ ...spec, ...change[name] })));
  return [...lines, ...prefillRun('shared'), ...prefillRun('copied')];
}

type Tag = 'every backend' | 'CPU only';
interface OpCase {
  name: string;
  tag: Tag;
}

const PRODUCTS: OpCase[] = ['q4_K', 'q5_K', 'q6_K', 'q8_0', 'f16', 'q4_0', 'q4_1'].map((type) => ({
  name: `a ${type} product's row is the same in every batch (K 2048, N 512, 1 to 130 rows; ${type === 'f16' ? 'CPU' : 'CPU_REPACK'})`,
  tag: type === 'f16' ? 'CPU only' : 'every backend',
}));
const IN_ORDER: OpCase = { name: 'an attention row is the same whatever shares its cache and its batch, its cells in position order', tag: 'every backend' };
const ANY_ORDER: OpCase = { name: 'an attention row is the same whatever shares its cache and its batch, its cells in any order', tag: 'CPU only' };
const VALUES: OpCase = { name: 'an attention row is attention over the cells it sees', tag: 'every backend' };
const ATTENTION = [IN_ORDER, ANY_ORDER, VALUES];
const F16 = PRODUCTS[4]!;

/**
 * One backend's section of the op test's output as native/tests/op_invariance_test.cc prints it,
 * `failed` naming the cases that read `not ok`; `stock`: the section --stock prints, all reported.
 */
function opBackend(name: string, device: 'CPU' | 'GPU', failed: OpCase[] = [], stock = false): string[] {
  const lines = [`# backend ${name} (${device} device${stock ? ', stock kernels: reported, not required' : ''})`];
  for (const test of [...PRODUCTS, ...ATTENTION]) {
    const bad = failed.includes(test);
    if (bad) for (const n of [1, 2, 3]) lines.push(`  FAIL ${test.name}: row ${n} of 4 on 3 threads differs from the row alone`);
    lines.push(`# ${test.name}: 99 rows compared, largest difference ${bad ? 0.0123 : 0}`, `${bad ? 'not ok' : 'ok'} ${test.name} [${test.tag}]`);
  }
  return lines;
}

/**
 * The op test's whole output, as `--backend all` prints it on a CUDA build: the CPU first, then the
 * GPU, whose [CPU only] cases fail by default (as they may there) and are reported, not required.
 */
function opTest(cpuFailed: OpCase[] = [], gpuFailed: OpCase[] = [ANY_ORDER, F16]): string[] {
  const required = cpuFailed.length + gpuFailed.filter((c) => c.tag === 'every backend').length;
  return [...opBackend('CPU', 'CPU', cpuFailed), ...opBackend('CUDA0', 'GPU', gpuFailed), `${required * 3} failure(s)`];
}

const tmp = (): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-device-verdict-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
};

/** Writes the call's files (null: absent) into a fresh folder. */
function outFolder(scorer: string[] | null, ops: string[] | null): string {
  const dir = tmp();
  if (scorer) fs.writeFileSync(path.join(dir, 'scorer.jsonl'), scorer.map((l) => `${l}\n`).join(''));
  if (ops) fs.writeFileSync(path.join(dir, 'op-test.txt'), ops.map((l) => `${l}\n`).join(''));
  return dir;
}

function verdict(scorer: string[] | null, ops: string[] | null = opTest()): { status: number | null; line: string; read: string } {
  const dir = outFolder(scorer, ops);
  const r = spawnSync('python3', ['scripts/lib/device-verdict.py', '--scorer', path.join(dir, 'scorer.jsonl'), '--op-test', path.join(dir, 'op-test.txt')], {
    cwd: root,
    encoding: 'utf8',
  });
  return { status: r.status, line: r.stdout, read: r.stderr };
}

t.test('every exact column 0 in both layouts and the required op tests ok: deterministic, whatever the fast kernels and the GPU op tests read', async (t) => {
  const v = verdict(cpuCall());
  t.equal(v.status, 0, v.read);
  t.equal(v.line, 'deterministic\n', 'one line');
  t.match(v.read, /shared layout, fast kernels, gather off \(setup on line \d+\) \(reported\): cold_vs_cached 0\.37/);
  t.match(v.read, /copied layout, exact kernels \(setup on line \d+\): cold_vs_cached 0, alone_vs_batched 0,/);
  t.match(v.read, /op test, backend CPU \(CPU device\): required: 10 ok, 0 not ok\n/);
  t.match(v.read, /op test, backend CUDA0 \(GPU device\): required: 8 ok, 0 not ok; reported: 0 ok, 2 not ok\n {2}not ok a f16 product/);
});

t.test('one exact column at 0.2: NOT deterministic, naming the column, its difference and the layout', async (t) => {
  for (const [run, layout] of [
    ['copied exact', 'copied'],
    ['shared exact', 'shared'],
    ['shared exact gathered', 'shared'],
  ] as const) {
    const v = verdict(cpuCall({ [run]: { diffs: { alone_vs_batched: 0.2 } } }));
    t.equal(v.status, 1, run);
    t.equal(v.line, `NOT deterministic: alone_vs_batched 0.2 (${layout} layout, exact kernels)\n`, run);
  }
  // The smallest difference counts: exact means bit for bit, not within the service's 1e-3.
  t.match(verdict(cpuCall({ 'copied exact': { diffs: { cold_vs_head_cached: 1e-7 } } })), {
    status: 1,
    line: /^NOT deterministic: cold_vs_head_cached 1e-07 \(copied layout/,
  });
  // The bench writes null for a difference that is not finite (a NaN in a log-prob).
  t.match(verdict(cpuCall({ 'shared exact': { diffs: { copied_vs_shared: null } } })), {
    status: 1,
    line: /^NOT deterministic: copied_vs_shared inf or NaN \(shared layout/,
  });
  // The first of several, in the file's order, with how many there are.
  t.match(verdict(cpuCall({ 'shared exact': { diffs: { alone_vs_batched: 0.2 } }, 'copied exact': { diffs: { cold_vs_cached: 0.5 } } })), {
    status: 1,
    line: 'NOT deterministic: alone_vs_batched 0.2 (shared layout, exact kernels), first of 2\n',
  });
});

t.test('only fast columns differ: still deterministic', async (t) => {
  const v = verdict(cpuCall({ 'shared fast': { diffs: { alone_vs_batched: 0.2, cold_vs_cached: null } }, 'copied fast': { diffs: { copied_vs_shared: 3 } } }));
  t.equal(v.status, 0, v.read);
  t.equal(v.line, 'deterministic\n');
});

t.test("on a GPU, the shared pool's exact run with its gather turned off is reported, not judged", async (t) => {
  const gpuCall = [
    ...run({ layout: 'shared', kernels: 'exact', gpu: true }),
    ...run({ layout: 'shared', kernels: 'fast', gpu: true, diffs: { alone_vs_batched: 0.3 } }),
    ...run({ layout: 'copied', kernels: 'exact', gpu: true }),
    ...run({ layout: 'copied', kernels: 'fast', gpu: true }),
    ...run({ layout: 'shared', kernels: 'exact', gpu: true, gather: false, diffs: { alone_vs_batched: 0.15 } }),
  ];
  const v = verdict(gpuCall);
  t.equal(v.status, 0, v.read);
  t.match(v.read, /shared layout, exact kernels, gather off .*\(reported: the exact kernels' GPU path gathers the shared pool\): .*alone_vs_batched 0\.15/);
  // The same difference with the gather on (the default there) decides.
  gpuCall.splice(0, 6, ...run({ layout: 'shared', kernels: 'exact', gpu: true, diffs: { alone_vs_batched: 0.15 } }));
  t.match(verdict(gpuCall), { status: 1, line: 'NOT deterministic: alone_vs_batched 0.15 (shared layout, exact kernels)\n' });
});

t.test('exact kernels off their covered path: reported, never judged, and the call reads NO VERDICT', async (t) => {
  const off = verdict(cpuCall({ 'copied exact': { resolved: { flashAttention: false } } }));
  t.equal(off.status, 2, off.read);
  t.equal(off.line, 'NO VERDICT: exact kernels ran off their covered path: flash attention resolved off (copied layout), first of 2\n');
  t.match(off.read, /copied layout, exact kernels \(setup on line \d+\) \(reported: off the covered path, flash attention resolved off\)/);
  const gpuCall = [
    ...run({ layout: 'shared', kernels: 'exact', gpu: true, resolved: { onLayerDevice: false } }),
    ...run({ layout: 'copied', kernels: 'exact', gpu: true }),
  ];
  t.match(verdict(gpuCall), {
    status: 2,
    line: /^NO VERDICT: exact kernels ran off their covered path: flash attention runs on another device than its layers \(shared layout\)/,
  });
  // A difference on a covered run still decides.
  t.match(verdict(cpuCall({ 'copied exact': { resolved: { flashAttention: false } }, 'shared exact': { diffs: { alone_vs_batched: 0.1 } } })), {
    status: 1,
    line: 'NOT deterministic: alone_vs_batched 0.1 (shared layout, exact kernels)\n',
  });
});

t.test("a required op test that fails: NOT deterministic, naming it; a GPU's [CPU only] cases are reported only", async (t) => {
  const v = verdict(cpuCall(), opTest([PRODUCTS[0]!]));
  t.equal(v.status, 1, v.read);
  t.equal(v.line, `NOT deterministic: op test ${PRODUCTS[0]!.name} (backend CPU)\n`);
  t.match(v.read, /op test, backend CPU \(CPU device\): required: 9 ok, 1 not ok\n {2}not ok a q4_K product.* \[every backend\]\n/);
  // On the CPU the [CPU only] cases are required too.
  for (const c of [F16, ANY_ORDER]) t.match(verdict(cpuCall(), opTest([c])), { status: 1, line: `NOT deterministic: op test ${c.name} (backend CPU)\n` });
  // On a GPU the [every backend] cases decide...
  for (const c of [PRODUCTS[0]!, PRODUCTS[6]!, IN_ORDER, VALUES]) {
    t.match(verdict(cpuCall(), opTest([], [c, F16])), { status: 1, line: `NOT deterministic: op test ${c.name} (backend CUDA0)\n` }, c.name);
  }
  // ...and its [CPU only] cases, failing all, change nothing.
  const gpuOnly = verdict(cpuCall(), opTest([], [F16, ANY_ORDER]));
  t.match(gpuOnly, { status: 0, line: 'deterministic\n' });
  t.match(gpuOnly.read, /reported: 0 ok, 2 not ok\n {2}not ok a f16 product.* \[CPU only\]\n {2}not ok an attention row .* in any order \[CPU only\]/);
  // A probe difference is named before an op test failure.
  t.match(verdict(cpuCall({ 'copied exact': { diffs: { cold_vs_cached: 0.2 } } }), opTest([VALUES])), {
    status: 1,
    line: 'NOT deterministic: cold_vs_cached 0.2 (copied layout, exact kernels), first of 2\n',
  });
  // The closing count alone (its case lines lost) still fails.
  const counted = opTest().map((l) => (l === '0 failure(s)' ? '3 failure(s)' : l));
  t.match(verdict(cpuCall(), counted), { status: 1, line: /^NOT deterministic: op test: 3 required failure\(s\)/ });
  // --stock's sections are reported whole.
  t.match(verdict(cpuCall(), [...opBackend('CPU', 'CPU', [], false), ...opBackend('CPU', 'CPU', [PRODUCTS[0]!, ANY_ORDER], true), '0 failure(s)']), {
    status: 0,
    line: 'deterministic\n',
  });
});

t.test("an older op test's output: untagged cases required, a section marked reported reported whole", async (t) => {
  const untag = (lines: string[]): string[] => lines.map((l) => l.replace(/ \[(every backend|CPU only)\]$/, ''));
  const old = [
    ...untag(opBackend('CUDA0', 'GPU', [F16])).map((l) => (l.startsWith('# backend') ? '# backend CUDA0 (reported, not required)' : l)),
    ...untag(opBackend('CPU', 'CPU')).map((l) => (l.startsWith('# backend') ? '# backend CPU' : l)),
    '0 failure(s)',
  ];
  const v = verdict(cpuCall(), old);
  t.equal(v.status, 0, v.read);
  t.match(
    v.read,
    /op test, backend CUDA0 \(no device type, every case reported\): required: 0 ok, 0 not ok; reported: 9 ok, 1 not ok\n {2}not ok a f16 product[^\n[]*\n/,
  );
  const failing = old.map((l) => (l === `ok ${PRODUCTS[1]!.name}` ? `not ok ${PRODUCTS[1]!.name}` : l));
  t.match(verdict(cpuCall(), failing), { status: 1, line: `NOT deterministic: op test ${PRODUCTS[1]!.name} (backend CPU)\n` });
});

t.test('missing evidence and no difference: NO VERDICT', async (t) => {
  const cases: Array<[string, string[] | null, string[] | null, RegExp]> = [
    [
      'the copied layout skipped for the deadline',
      cpuCall().filter((l) => !l.includes('"layout":"copied"')),
      opTest(),
      /no exact-kernel determinism run in the copied layout/,
    ],
    [
      'no determinism run at all',
      [...prefillRun('shared'), ...prefillRun('copied')],
      opTest(),
      /no exact-kernel determinism run in the shared layout, first of 2/,
    ],
    ['no scorer.jsonl', null, opTest(), /no scorer bench records/],
    [
      'a column in error',
      cpuCall({ 'copied exact': { diffs: { alone_vs_batched: 'the probe was not scored' } } }),
      opTest(),
      /copied alone_vs_batched: the probe was not scored/,
    ],
    ['a column missing', cpuCall({ 'shared exact': { without: ['copied_vs_shared'] } }), opTest(), /: no copied_vs_shared/],
    ['no op test output', cpuCall(), null, /no op test output .*: it did not run/],
    ['the op test stopped in the GPU section', cpuCall(), opTest().slice(0, -5), /the op test did not finish/],
    ['the op test ran no required backend', cpuCall(), [...opBackend('CPU', 'CPU', [], true), '0 failure(s)'], /the op test ran no required backend/],
    [
      'a GPU call whose op test ran no GPU backend',
      cpuCall({ 'shared exact': { gpu: true } }),
      opTest().filter((l, i, all) => i < all.indexOf('# backend CUDA0 (GPU device)') || l.endsWith('failure(s)')),
      /the op test ran no GPU backend's required cases, on a GPU call/,
    ],
  ];
  for (const [name, scorer, ops, why] of cases) {
    const v = verdict(scorer, ops);
    t.equal(v.status, 2, `${name}: ${v.line}`);
    t.match(v.line, /^NO VERDICT: /, name);
    t.match(v.line, why, name);
  }
  // A difference decides even where other evidence is missing.
  const noCopied = cpuCall({ 'shared exact': { diffs: { cold_vs_cached: 0.2 } } }).filter((l) => !l.includes('"layout":"copied"'));
  t.match(verdict(noCopied, null), { status: 1, line: /^NOT deterministic: cold_vs_cached 0\.2 \(shared layout/ });
});

/** gpu-bench.sh judging the files in OUT, building and running nothing. */
function judgeOnly(scorer: string[] | null, ops: string[] | null): { status: number | null; summary: string[]; out: string[]; work: string[] } {
  const out = outFolder(scorer, ops);
  const work = tmp();
  const r = spawnSync('bash', ['scripts/gpu-bench.sh'], {
    cwd: root,
    encoding: 'utf8',
    env: { PATH: process.env.PATH!, VERDICT_ONLY: '1', OUT: out, WORK: work },
  });
  return {
    status: r.status,
    summary: fs.readFileSync(path.join(out, 'summary.txt'), 'utf8').split('\n'),
    out: fs.readdirSync(out).sort(),
    work: fs.readdirSync(work),
  };
}

t.test("gpu-bench.sh: the verdict is summary.txt's first line and the call's exit status", async (t) => {
  const ok = judgeOnly(cpuCall(), opTest());
  t.equal(ok.status, 0, ok.summary.join('\n'));
  t.equal(ok.summary[0], 'deterministic');
  t.ok(ok.summary.includes('  op test, backend CUDA0 (GPU device): required: 8 ok, 0 not ok; reported: 0 ok, 2 not ok'), 'what it read follows');
  t.match(ok.summary.at(-2), /^== done in \d+ s, status 0$/);
  t.same(ok.out, ['op-test.txt', 'scorer.jsonl', 'summary.txt'], 'no other file in OUT');
  t.same(ok.work, [], 'nothing left in WORK');

  const bad = judgeOnly(cpuCall({ 'copied exact': { diffs: { alone_vs_batched: 0.2 } } }), opTest());
  t.equal(bad.status, 1);
  t.equal(bad.summary[0], 'NOT deterministic: alone_vs_batched 0.2 (copied layout, exact kernels)');

  const none = judgeOnly(cpuCall(), null);
  t.equal(none.status, 2);
  t.match(none.summary[0], /^NO VERDICT: no op test output/);
});
