// When the CUDA image's CUDA addon gives way to the CPU addon beside it, and the line that says why,
// without an addon: the loader's errors as Node reports them on a machine with no NVIDIA driver.
import t from 'tap';
import { CPU_ADDON_FILE, cpuFallbackLine, loadFailureReason, noGpuReason } from '../../src/engine/addon-choice.js';

const NO_DRIVER = 'libcuda.so.1: cannot open shared object file: No such file or directory';

t.test('a CUDA addon that finds a GPU serves; one that finds none gives way; a CPU build is never replaced', async (t) => {
  t.equal(noGpuReason('cuda', ['NVIDIA H200']), null);
  t.equal(noGpuReason('cuda', []), 'the CUDA driver finds no GPU');
  t.equal(noGpuReason('cpu', []), null, 'a CPU addon runs on the CPU anyway');
});

t.test('a missing driver is named as such; any other refusal is quoted', async (t) => {
  t.equal(loadFailureReason(NO_DRIVER), 'no CUDA driver found (libcuda.so.1 is not installed)');
  t.equal(loadFailureReason(`/opt/arbitra/build/Release/arbitra.node: ${NO_DRIVER}`), 'no CUDA driver found (libcuda.so.1 is not installed)');
  const cudart = 'libcudart.so.13: cannot open shared object file: No such file or directory';
  t.equal(loadFailureReason(cudart), `the CUDA addon cannot load (${cudart})`, 'a missing CUDA runtime is the image, not the host: its own words');
  const symbol = '/opt/arbitra/build/Release/arbitra.node: undefined symbol: cuMemCreate, version libcuda.so.1';
  t.equal(loadFailureReason(symbol), `the CUDA addon cannot load (${symbol})`, 'a driver too old to link is not reported as no driver');
});

t.test('the line says why, that it serves on the CPU, with which file, and how to give it a GPU', async (t) => {
  const line = cpuFallbackLine(loadFailureReason(NO_DRIVER));
  t.match(line, /^no CUDA driver found \(libcuda\.so\.1 is not installed\): serving on the CPU/);
  t.ok(line.includes(CPU_ADDON_FILE));
  t.match(line, /--device nvidia\.com\/gpu=all/);
  t.match(line, /--gpus all/);
  t.notMatch(line, /\n/, 'one line');
});
