#!/usr/bin/env node
// `npm run check:cuda`: proves that the addon still builds with the CUDA backend, on a machine
// with no GPU and no CUDA install. Not part of `npm test`: the llama.cpp CUDA kernels take about an
// hour to compile on two cores.
//
// 1. A virtual environment of its own (.venv-cuda/, git-ignored) holds NVIDIA's CUDA toolkit wheels
//    from PyPI at the exact versions below.
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
import { ensureVenv, root, venvPython } from './lib/venv.mjs';

// CUDA 13.2.2 (the versions the `cuda-toolkit==13.2.2` meta-package pins), not 12.x: every
// nvidia-cuda-nvcc-cu12 wheel on PyPI (12.0.76 to 12.9.86) ships only ptxas and libnvvm, for JIT
// use, and no nvcc, cudafe++, fatbinary, nvlink or cicc, so no CUDA 12 build is possible from PyPI.
// The CUDA 13 wheels ship the whole compiler into one nvidia/cu13/ tree. CUDA 13 still targets
// sm_75 and up (sm_90 included) and accepts GCC 6 to 15 (Debian 12 has 12.2), so no
// -allow-unsupported-compiler is needed. nvidia-cuda-crt (crt/ headers) and nvidia-nvvm (cicc) are
// dependencies of nvcc, nvidia-cuda-nvrtc one of cuBLAS; nvidia-cuda-cuobjdump is for the check.
// A binary built with CUDA 13 needs an NVIDIA driver >= 580 to run.
const CUDA_RELEASE = '13.2.2';
const REQUIREMENTS = `nvidia-cuda-nvcc==13.2.86
nvidia-cuda-crt==13.2.86
nvidia-nvvm==13.2.86
nvidia-cuda-runtime==13.2.86
nvidia-cublas==13.4.1.3
nvidia-cuda-nvrtc==13.2.86
nvidia-cuda-cccl==13.2.86
nvidia-cuda-cuobjdump==13.2.86
`;
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

// --- 1. the pinned toolkit wheels -----------------------------------------------------------------
ensureVenv({
  name: NAME,
  dir: '.venv-cuda',
  requirements: REQUIREMENTS,
  source: `the CUDA ${CUDA_RELEASE} toolkit wheels`,
  minPython: [3, 9],
  needs: 'pip for the CUDA toolkit wheels',
});
const purelib = capture(venvPython(path.join(root, '.venv-cuda')), ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])']);
if (!purelib.ok) fail(`cannot read the site-packages folder of .venv-cuda/: ${purelib.out}`);
const cu13 = path.join(purelib.out, 'nvidia', 'cu13');
for (const need of ['bin/nvcc', 'bin/nvcc.profile', 'bin/cuobjdump', 'nvvm/bin/cicc', 'include/cuda_runtime.h', 'include/crt/host_config.h', 'include/cccl/cub/cub.cuh', 'include/cuda.h', 'lib/libcudart.so.13', 'lib/libcublas.so.13']) {
  if (!fs.existsSync(path.join(cu13, need))) fail(`the wheels in .venv-cuda/ lack nvidia/cu13/${need}; delete .venv-cuda/ and run again`);
}

// --- 2. the stitched toolkit root ----------------------------------------------------------------
// nvcc reads nvcc.profile from the folder it was *invoked* from (not the symlink's target) and takes
// TOP=<that folder>/.. for include/, lib/, lib/stubs and nvvm/, so bin/ is a real folder of links to
// each file. lib64/ (lib links to it) is a real folder too: the wheels ship only the versioned
// sonames (libcudart.so.13), while FindCUDAToolkit's find_library(cudart) and `-lcudart` need the
// unversioned libcudart.so. The driver, libcuda.so.1, is in no wheel (it comes with the GPU driver),
// yet ggml-cuda links CUDA::cuda_driver (for virtual memory management) and FindCUDAToolkit looks for
// it in lib64/stubs: a stub is built there the way NVIDIA's own is, with soname libcuda.so.1 and one
// empty function for each cu* entry point that cuda.h declares. The addon's DT_NEEDED is then
// libcuda.so.1, which resolves to the real driver at load time; the stub itself is never loaded.
// The toolkit is stitched again only when the wheel set or this recipe changes, so that an unchanged
// stub does not relink the addon.
function stitch() {
  const recipe = JSON.stringify({ version: 1, cu13, REQUIREMENTS });
  const stampFile = path.join(toolkit, '.stitched');
  if (fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === recipe) return;
  log(`stitching a CUDA ${CUDA_RELEASE} toolkit root in build-cuda/toolkit/`);
  fs.rmSync(toolkit, { recursive: true, force: true });
  const bin = path.join(toolkit, 'bin');
  const lib64 = path.join(toolkit, 'lib64');
  fs.mkdirSync(bin, { recursive: true });
  fs.mkdirSync(path.join(lib64, 'stubs'), { recursive: true });
  for (const entry of fs.readdirSync(path.join(cu13, 'bin'))) fs.symlinkSync(path.join(cu13, 'bin', entry), path.join(bin, entry));
  fs.symlinkSync(path.join(cu13, 'include'), path.join(toolkit, 'include'));
  fs.symlinkSync(path.join(cu13, 'nvvm'), path.join(toolkit, 'nvvm'));
  fs.symlinkSync('lib64', path.join(toolkit, 'lib'));
  const entries = fs.readdirSync(path.join(cu13, 'lib'));
  for (const entry of entries) fs.symlinkSync(path.join(cu13, 'lib', entry), path.join(lib64, entry));
  for (const entry of entries) {
    const m = /^(lib[^/]+?\.so)(\.\d+)+$/.exec(entry);
    if (m && !fs.existsSync(path.join(lib64, m[1]))) fs.symlinkSync(entry, path.join(lib64, m[1]));
  }

  const pre = capture('gcc', ['-E', '-P', '-x', 'c', `-I${path.join(cu13, 'include')}`, path.join(cu13, 'include', 'cuda.h')]);
  if (!pre.ok) fail(`cannot preprocess cuda.h for the libcuda stub:\n${pre.out}`);
  // After preprocessing, the versioned names (cuMemAlloc -> cuMemAlloc_v2) are the ones declared,
  // which are the ones the compiled code references.
  const names = [...new Set([...pre.out.matchAll(/\bCUresult\s+(cu[A-Za-z0-9_]+)\s*\(/g)].map((m) => m[1]))].sort();
  if (names.length < 100) fail(`found only ${names.length} driver entry points in cuda.h; the libcuda stub would be incomplete`);
  const source = path.join(lib64, 'stubs', 'libcuda-stub.c');
  fs.writeFileSync(source, `/* Link-time stub of the CUDA driver (libcuda.so.1), generated by scripts/cuda-build-check.mjs. */\n${names.map((n) => `int ${n}(void) { return 999; /* CUDA_ERROR_UNKNOWN */ }`).join('\n')}\n`);
  const cc = capture('gcc', ['-shared', '-fPIC', '-O0', '-Wl,-soname,libcuda.so.1', '-o', path.join(lib64, 'stubs', 'libcuda.so'), source]);
  if (!cc.ok) fail(`cannot build the libcuda stub:\n${cc.out}`);
  fs.writeFileSync(stampFile, recipe);
}
stitch();

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
