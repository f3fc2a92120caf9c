// The local GPUs' memory, read from `nvidia-smi` when it is installed. No NVIDIA tools (or no GPU)
// is an answer too: an empty list, which `arbitra models list --fits` reports as "no GPU found".
import { execFileSync } from 'node:child_process';

export interface GpuMemory {
  index: number;
  /** Total memory in bytes. */
  bytes: number;
}

/** Parses `nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits` (MiB, one GPU a line). */
export function parseNvidiaSmi(text: string): GpuMemory[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^\d+(\.\d+)?$/.test(l))
    .map((l, index) => ({ index, bytes: Math.round(Number(l) * 1024 * 1024) }));
}

/** Every NVIDIA GPU's memory; empty when nvidia-smi is missing or fails. */
export function readGpuMemory(command = 'nvidia-smi'): GpuMemory[] {
  try {
    const out = execFileSync(command, ['--query-gpu=memory.total', '--format=csv,noheader,nounits'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    });
    return parseNvidiaSmi(out);
  } catch {
    return [];
  }
}
