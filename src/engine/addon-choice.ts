// Which addon a CUDA build serves on. The CUDA image carries the CPU addon beside the CUDA one
// (deploy/container/Containerfile): the CUDA addon links libcuda, which only the host's NVIDIA driver
// provides, so a container started without the driver cannot load it, and one started with the
// driver but no GPU would find no device. Either way it serves on the CPU addon and says why in one
// start-up line, instead of failing to start or calling itself a CUDA engine while it runs on the CPU.

/** The CPU addon's file name, beside the CUDA addon it stands in for. */
export const CPU_ADDON_FILE = 'arbitra-cpu.node';

/** Why a CUDA addon that the loader refused gives way to the CPU addon, from the loader's error. */
export function loadFailureReason(error: string): string {
  if (/libcuda\.so[.\d]*: cannot open shared object file/.test(error)) return 'no CUDA driver found (libcuda.so.1 is not installed)';
  return `the CUDA addon cannot load (${error})`;
}

/** Why a loaded addon gives way to the CPU addon; null when it serves (a CUDA build that finds a GPU, or a CPU build). */
export function noGpuReason(backend: string, gpus: readonly string[]): string | null {
  return backend === 'cuda' && gpus.length === 0 ? 'the CUDA driver finds no GPU' : null;
}

/** The start-up line of a process that serves on the CPU addon because of `reason`. */
export function cpuFallbackLine(reason: string): string {
  return `${reason}: serving on the CPU (${CPU_ADDON_FILE}); to serve on a GPU, give the container one (podman: --device nvidia.com/gpu=all, docker: --gpus all)`;
}
