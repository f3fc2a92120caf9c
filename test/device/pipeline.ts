// The device call on this machine's CPU (npm run test:device): scripts/device-pack.mjs, then
// scripts/gpu-bench.sh with GPU=0 on the small test model, the same pipeline a GPU machine runs.
// A file that imports this is in the suite's device tier, which `npm test` leaves out: building
// the addon, llama-server and the tools takes tens of minutes on 2 cores (its folder, WORK, is
// kept in the system's temporary folder, so a second run builds only what changed).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../../src/paths.js';
import { TEST_MODEL } from '../helpers/models.js';

const root = packageRoot();
export const API_CONCURRENCY = '1,2';

export interface Manifest {
  /** The short commit of deps/llama.cpp the pack was made from. */
  llamaCpp: string;
  files: Record<string, number>;
  travel: { tracked: number; untracked: number; pack: number; total: number; limitMiB: number };
}

/** Packs .device/ as a session does before its device call; the pack's own manifest. */
export function pack(): { status: number | null; output: string; manifest: Manifest | null } {
  const r = spawnSync(process.execPath, ['scripts/device-pack.mjs'], { cwd: root, encoding: 'utf8', env: { ...process.env, ARBITRA_BUILD_JOBS: '2' } });
  return { status: r.status, output: `${r.stdout}${r.stderr}`, manifest: r.status === 0 ? packed() : null };
}

/** The manifest of the pack in .device/, if there is one. */
export function packed(): Manifest | null {
  const file = path.join(root, '.device', 'pack.json');
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest) : null;
}

/** One line of arbitra-scorer-bench's --json output (native/tools/scorer_bench.cc), the fields the device tests read. */
export interface ScorerLine {
  bench: string;
  layout?: string;
  kernels?: string;
  kv_gather?: boolean;
  cpu_variant?: string;
  cpu_products?: string;
  compare?: string;
  max_abs_diff?: number;
  prefix_tok_s?: number;
  error?: string;
}

export interface PipelineRun {
  status: number | null;
  seconds: number;
  /** The files it left in OUT, by name. */
  files: Record<string, string>;
}

/**
 * Runs scripts/gpu-bench.sh with GPU=0 on the test model, with a deadline for a 2-core machine and
 * bench:api at concurrency 1 and 2: here a decision of 16 prompts takes seconds, and the GPU call's
 * 8 and 32 in flight would hold each round for minutes (a first run at 1,8,32 passed 600 s in a@8).
 */
export function runPipeline(): PipelineRun {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-device-out-'));
  const started = Date.now();
  const r = spawnSync('bash', ['scripts/gpu-bench.sh'], {
    cwd: root,
    // Not stdout: the op tests' 'ok ...' lines would read as TAP. summary.txt has it all.
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      GPU: '0',
      QUICK: '1',
      MODEL: TEST_MODEL,
      DEADLINE: '5400',
      API_CONCURRENCY: API_CONCURRENCY,
      API_SECONDS: '2',
      OUT: out,
      WORK: path.join(os.tmpdir(), 'arbitra-device-test'),
    },
  });
  const files = Object.fromEntries(fs.readdirSync(out).map((f) => [f, fs.readFileSync(path.join(out, f), 'utf8')]));
  fs.rmSync(out, { recursive: true, force: true });
  return { status: r.status, seconds: (Date.now() - started) / 1000, files };
}
