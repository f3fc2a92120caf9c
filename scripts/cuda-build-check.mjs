#!/usr/bin/env node
// `npm run check:cuda`: proves that the addon still builds with the CUDA backend, on a machine
// with no GPU and no CUDA install. Not part of `npm test`: the llama.cpp CUDA kernels take about an
// hour to compile on two cores.
//
// 1. A virtual environment of its own (.venv-cuda/, git-ignored) holds NVIDIA's CUDA toolkit wheels
//    from PyPI at the exact versions scripts/lib/cuda-toolkit.mjs pins.
// 2. build-cuda/toolkit/ is stitched from them into the layout nvcc and CMake's FindCUDAToolkit
//    expect (bin/, include/, nvvm/, lib64/ with unversioned .so links and a libcuda stub).
// 3. The same CMakeLists.txt the addon uses is configured and built through cmake-js, as
//    scripts/setup.mjs does, with ARBITRA_CUDA=ON and CMAKE_CUDA_ARCHITECTURES=90 (Hopper: H100,
//    H200), into build-cuda/ (build/, the CPU addon the tests load, is never touched), under
//    `nice -n 19` with 2 jobs (ARBITRA_BUILD_JOBS overrides). A second run is incremental.
// 4. The .node file is checked without loading it (loading needs libcuda.so.1, the driver): it must
//    hold sm_90 device code (cuobjdump from the wheels), be compiled with ARBITRA_BACKEND="cuda",
//    hold ggml's CUDA backend, and link libcudart, libcublas and libcuda.
// The last line is `check:cuda: PASS ...` or `check:cuda: FAIL: <reason>` (exit 1).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CUDA_RELEASE, stitchToolkit, toolkitWheels } from './lib/cuda-toolkit.mjs';
import { root } from './lib/venv.mjs';

const ARCH = '90';

const NAME = 'check:cuda';
const log = (msg) => process.stdout.write(`[${NAME}] ${msg}\n`);
function fail(message) {
  process.stderr.write(`${NAME}: FAIL: ${message}\n`);
  process.exit(1);
}

function capture(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, ...opts });
  return { ok: !r.error && r.status === 0, status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim(), error: r.error };
}

const buildDir = path.join(root, 'build-cuda');
const toolkit = path.join(buildDir, 'toolkit');
const addon = path.join(buildDir, 'Release', 'arbitra.node');
const cmakeJs = path.join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js');

// --- prerequisites: what `npm install` leaves behind -------------------------------------------
if (!fs.existsSync(path.join(root, 'deps', 'llama.cpp', 'CMakeLists.txt'))) {
  fail('deps/llama.cpp is missing: run `npm install` first (scripts/setup.mjs extracts it)');
}
if (!fs.existsSync(cmakeJs)) fail('node_modules/cmake-js is missing: run `npm install` first');
for (const tool of ['cmake', 'gcc', 'g++', 'nice', 'readelf', 'nm']) {
  if (capture(tool, ['--version']).error?.code === 'ENOENT') fail(`${tool} is not on PATH`);
}

// --- 1. the pinned toolkit wheels, 2. the stitched toolkit root (scripts/lib/cuda-toolkit.mjs) -------
stitchToolkit(toolkit, toolkitWheels(NAME, fail), { copy: false, fail, log });

const nvcc = path.join(toolkit, 'bin', 'nvcc');
const version = capture(nvcc, ['--version']);
if (!version.ok) fail(`the stitched nvcc does not run: ${version.out || version.error?.message}`);
log(`nvcc: ${version.out.split('\n').filter((l) => l.startsWith('Cuda compilation tools')).join('') || version.out.split('\n').pop()}; host compiler: ${capture('g++', ['-dumpfullversion']).out}`);

// --- 3. configure and build ------------------------------------------------------------------------
const jobs = String(Number(process.env.ARBITRA_BUILD_JOBS) || 2);
const env = { ...process.env };
// As scripts/setup.mjs: Node's headers from beside node, so cmake-js downloads nothing.
const localHeaders = path.resolve(path.dirname(process.execPath), '..');
if (!env.npm_config_nodedir && fs.existsSync(path.join(localHeaders, 'include', 'node', 'node.h'))) env.npm_config_nodedir = localHeaders;
delete env.CUDA_PATH;
delete env.CUDAToolkit_ROOT;
const defines = [
  '--CDARBITRA_CUDA=ON',
  '--CDARBITRA_NATIVE=OFF',
  `--CDCMAKE_CUDA_ARCHITECTURES=${ARCH}`,
  `--CDCMAKE_CUDA_COMPILER=${nvcc}`,
  `--CDCUDAToolkit_ROOT=${toolkit}`,
];
function cmakeJsStep(what, argv) {
  const cmd = ['nice', '-n', '19', process.execPath, cmakeJs, ...argv, '--out', 'build-cuda', ...defines];
  log(`${what}: ${cmd.map((a) => (a.startsWith(root) ? path.relative(root, a) || '.' : a)).join(' ')}`);
  const started = Date.now();
  const r = spawnSync(cmd[0], cmd.slice(1), { cwd: root, env, stdio: 'inherit' });
  if (r.error || r.status !== 0) fail(`${what} failed (${r.error?.message ?? `exit ${r.status}`}); the error is printed above`);
  return (Date.now() - started) / 1000;
}
// `configure` every run (cheap when nothing changed) so a changed flag always lands; `build`, not
// `compile`, because cmake-js's compile wipes the folder and starts over when a build fails.
cmakeJsStep('configure', ['configure']);
const buildSeconds = cmakeJsStep(`build (${jobs} jobs)`, ['build', '--target', 'arbitra', '--parallel', jobs]);
log(`build step took ${(buildSeconds / 60).toFixed(1)} min`);

// --- 4. verify without loading ---------------------------------------------------------------------
if (!fs.existsSync(addon)) fail(`the build finished but ${path.relative(root, addon)} is not there`);
const size = fs.statSync(addon).size;

const cuobjdump = path.join(toolkit, 'bin', 'cuobjdump');
const elf = capture(cuobjdump, ['--list-elf', addon]);
if (!elf.ok) fail(`cuobjdump --list-elf found no CUDA device code in ${path.relative(root, addon)}: ${elf.out}`);
const elfLines = elf.out.split('\n').filter((l) => /ELF file/.test(l));
const sm90 = elfLines.filter((l) => new RegExp(`\\.sm_${ARCH}[a-z]?\\.cubin`).test(l));
const others = elfLines.filter((l) => !sm90.includes(l));
if (sm90.length === 0) fail(`the addon holds no sm_${ARCH} device code (cuobjdump --list-elf: ${elfLines.length} cubins, none for sm_${ARCH})`);
if (others.length > 0) fail(`the addon holds device code for other architectures too: ${others.slice(0, 3).join('; ')}`);
const ptx = capture(cuobjdump, ['--list-ptx', addon]);
const ptxLines = ptx.ok ? ptx.out.split('\n').filter((l) => /PTX file/.test(l)) : [];

// ARBITRA_BACKEND is a compile definition of the addon's own sources (CMakeLists.txt): read it from
// the generated build rules, since `require()`-ing the addon would need the driver.
const rules = ['build.ninja', 'CMakeFiles/arbitra.dir/flags.make'].map((f) => path.join(buildDir, f)).find((f) => fs.existsSync(f));
if (!rules) fail('build-cuda/ has neither build.ninja nor CMakeFiles/arbitra.dir/flags.make to read ARBITRA_BACKEND from');
const backendDefs = [...new Set([...fs.readFileSync(rules, 'utf8').matchAll(/-DARBITRA_BACKEND=\\?"([a-z]+)\\?"/g)].map((m) => m[1]))];
if (backendDefs.length !== 1 || backendDefs[0] !== 'cuda') fail(`the addon is compiled with ARBITRA_BACKEND=${backendDefs.join(',') || '(none)'}, not "cuda"`);
const symbols = capture('nm', ['--defined-only', addon]);
const cudaSymbols = symbols.ok ? symbols.out.split('\n').filter((l) => /\bggml_backend_cuda_(init|reg)\b/.test(l)) : [];
if (cudaSymbols.length === 0) fail('the addon does not contain ggml_backend_cuda_init/ggml_backend_cuda_reg: the CUDA backend was not linked in');

const dyn = capture('readelf', ['-d', addon]);
if (!dyn.ok) fail(`readelf -d failed: ${dyn.out}`);
const needed = [...dyn.out.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
for (const lib of ['libcudart.so', 'libcublas.so', 'libcuda.so']) {
  if (!needed.some((n) => n.startsWith(`${lib}.`))) fail(`the addon does not link ${lib}.* (NEEDED: ${needed.join(', ')})`);
}
// ldd with the wheels' libraries on the path: everything but the driver must resolve.
const ldd = capture('ldd', [addon], { env: { ...process.env, LD_LIBRARY_PATH: path.join(toolkit, 'lib64') } });
const lddCuda = ldd.out.split('\n').map((l) => l.trim()).filter((l) => /cud|cublas/.test(l));
const missing = ldd.out.split('\n').map((l) => l.trim()).filter((l) => /not found/.test(l) && !l.startsWith('libcuda.so.1'));
if (missing.length > 0) fail(`libraries the addon needs resolve nowhere: ${missing.join('; ')}`);

log(`${path.relative(root, addon)}: ${(size / 1024 / 1024).toFixed(1)} MiB (${size} bytes)`);
log(`cuobjdump --list-elf: ${elfLines.length} cubins, all sm_${ARCH}, e.g.\n    ${sm90.slice(0, 3).join('\n    ')}`);
log(`cuobjdump --list-ptx: ${ptxLines.length} PTX entries${ptxLines.length ? `, e.g. ${ptxLines[0]}` : ''}`);
log(`ARBITRA_BACKEND="cuda" (${path.relative(root, rules)}); ${cudaSymbols.map((l) => l.split(' ').pop()).join(', ')} defined`);
log(`NEEDED: ${needed.join(', ')}`);
log(`ldd (LD_LIBRARY_PATH=build-cuda/toolkit/lib64; libcuda.so.1 is the driver, absent without a GPU):\n    ${lddCuda.join('\n    ')}`);
process.stdout.write(
  `${NAME}: PASS: build-cuda/Release/arbitra.node (${(size / 1024 / 1024).toFixed(1)} MiB, CUDA ${CUDA_RELEASE}) holds ${sm90.length} sm_${ARCH} cubins, backend "cuda", links ${needed.filter((n) => /^libcu/.test(n)).join(' ')}\n`,
);
