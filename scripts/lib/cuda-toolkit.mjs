// NVIDIA's CUDA toolkit from its wheels on PyPI, laid out as nvcc and CMake's FindCUDAToolkit expect
// an installed toolkit. Two users: `npm run check:cuda` (scripts/cuda-build-check.mjs) builds the
// addon against it on a machine without CUDA, and scripts/container/bases.mjs copies it into the
// stand-ins for NVIDIA's CUDA images where those cannot be pulled.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureVenv, root, venvPython } from './venv.mjs';

// CUDA 13.2.2 (the versions the `cuda-toolkit==13.2.2` meta-package pins), not 12.x: every
// nvidia-cuda-nvcc-cu12 wheel on PyPI (12.0.76 to 12.9.86) ships only ptxas and libnvvm, for JIT
// use, and no nvcc, cudafe++, fatbinary, nvlink or cicc, so no CUDA 12 build is possible from PyPI.
// The CUDA 13 wheels ship the whole compiler into one nvidia/cu13/ tree. CUDA 13 still targets
// sm_75 and up (sm_90 included) and accepts GCC 6 to 15 (Debian 12 has 12.2), so no
// -allow-unsupported-compiler is needed. nvidia-cuda-crt (crt/ headers) and nvidia-nvvm (cicc) are
// dependencies of nvcc, nvidia-cuda-nvrtc one of cuBLAS; nvidia-cuda-cuobjdump is for the check.
// A binary built with CUDA 13 needs an NVIDIA driver >= 580 to run.
export const CUDA_RELEASE = '13.2.2';
const REQUIREMENTS = `nvidia-cuda-nvcc==13.2.86
nvidia-cuda-crt==13.2.86
nvidia-nvvm==13.2.86
nvidia-cuda-runtime==13.2.86
nvidia-cublas==13.4.1.3
nvidia-cuda-nvrtc==13.2.86
nvidia-cuda-cccl==13.2.86
nvidia-cuda-cuobjdump==13.2.86
`;

function capture(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return { ok: !r.error && r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim(), error: r.error };
}

/** The nvidia/cu13/ tree of the pinned wheels, installed into .venv-cuda/ when missing; `fail` ends the run with a message. */
export function toolkitWheels(name, fail) {
  ensureVenv({ name, dir: '.venv-cuda', requirements: REQUIREMENTS, source: `the CUDA ${CUDA_RELEASE} toolkit wheels`, minPython: [3, 9], needs: 'pip for the CUDA toolkit wheels' });
  const purelib = capture(venvPython(path.join(root, '.venv-cuda')), ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])']);
  if (!purelib.ok) fail(`cannot read the site-packages folder of .venv-cuda/: ${purelib.out}`);
  const cu13 = path.join(purelib.out, 'nvidia', 'cu13');
  for (const need of ['bin/nvcc', 'bin/nvcc.profile', 'bin/cuobjdump', 'nvvm/bin/cicc', 'include/cuda_runtime.h', 'include/crt/host_config.h', 'include/cccl/cub/cub.cuh', 'include/cuda.h', 'lib/libcudart.so.13', 'lib/libcublas.so.13']) {
    if (!fs.existsSync(path.join(cu13, need))) fail(`the wheels in .venv-cuda/ lack nvidia/cu13/${need}; delete .venv-cuda/ and run again`);
  }
  return cu13;
}

/**
 * Makes `toolkit` a CUDA toolkit root from the wheels' `cu13` tree: links into it (`copy` false, a
 * build on this machine) or a copy (`copy` true, for an image).
 *
 * nvcc reads nvcc.profile from the folder it was *invoked* from (not the symlink's target) and takes
 * TOP=<that folder>/.. for include/, lib/, lib/stubs and nvvm/, so bin/ is a real folder (of links to
 * each file when linking). lib64/ (lib links to it) is a real folder too: the wheels ship only the
 * versioned sonames (libcudart.so.13), while FindCUDAToolkit's find_library(cudart) and `-lcudart`
 * need the unversioned libcudart.so. The driver, libcuda.so.1, is in no wheel (it comes with the GPU
 * driver), yet ggml-cuda links CUDA::cuda_driver (for virtual memory management) and FindCUDAToolkit
 * looks for it in lib64/stubs: a stub is built there the way NVIDIA's own is, with soname
 * libcuda.so.1 and one empty function for each cu* entry point that cuda.h declares. A binary's
 * DT_NEEDED is then libcuda.so.1, which resolves to the real driver at load time; the stub itself is
 * never loaded. The root is made again only when the wheel set or this recipe changes, so that an
 * unchanged stub does not relink the addon.
 */
export function stitchToolkit(toolkit, cu13, { copy, fail, log }) {
  // A copy is its own recipe; a linked root keeps the one it had before copies existed.
  const recipe = JSON.stringify(copy ? { version: 1, cu13, REQUIREMENTS, copy } : { version: 1, cu13, REQUIREMENTS });
  const stampFile = path.join(toolkit, '.stitched');
  if (fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === recipe) return;
  log(`${copy ? 'copying' : 'stitching'} a CUDA ${CUDA_RELEASE} toolkit root in ${path.relative(root, toolkit)}/`);
  fs.rmSync(toolkit, { recursive: true, force: true });
  const place = (from, to) => (copy ? fs.cpSync(from, to, { recursive: true }) : fs.symlinkSync(from, to));
  const bin = path.join(toolkit, 'bin');
  const lib64 = path.join(toolkit, 'lib64');
  fs.mkdirSync(bin, { recursive: true });
  fs.mkdirSync(path.join(lib64, 'stubs'), { recursive: true });
  for (const entry of fs.readdirSync(path.join(cu13, 'bin'))) place(path.join(cu13, 'bin', entry), path.join(bin, entry));
  place(path.join(cu13, 'include'), path.join(toolkit, 'include'));
  place(path.join(cu13, 'nvvm'), path.join(toolkit, 'nvvm'));
  fs.symlinkSync('lib64', path.join(toolkit, 'lib'));
  const entries = fs.readdirSync(path.join(cu13, 'lib'));
  for (const entry of entries) place(path.join(cu13, 'lib', entry), path.join(lib64, entry));
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
  fs.writeFileSync(source, `/* Link-time stub of the CUDA driver (libcuda.so.1), generated by scripts/lib/cuda-toolkit.mjs. */\n${names.map((n) => `int ${n}(void) { return 999; /* CUDA_ERROR_UNKNOWN */ }`).join('\n')}\n`);
  const cc = capture('gcc', ['-shared', '-fPIC', '-O0', '-Wl,-soname,libcuda.so.1', '-o', path.join(lib64, 'stubs', 'libcuda.so'), source]);
  if (!cc.ok) fail(`cannot build the libcuda stub:\n${cc.out}`);
  fs.writeFileSync(stampFile, recipe);
}
