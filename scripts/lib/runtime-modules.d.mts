export interface Target {
  platform: string;
  arch: string;
  libc: 'glibc' | 'musl';
  abi: number;
}

export interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  os?: string[];
  cpu?: string[];
  libc?: string[];
}

export function foreignBinary(file: string, target: Target): boolean;
export function runtimePackages(lock: { packages: Record<string, LockEntry> }, target: Target): string[];
export function runtimeModuleFiles(root: string, target: Target): string[];
