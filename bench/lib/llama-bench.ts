// Builds and runs llama.cpp's own `llama-bench`, the reference the engine benchmark is measured against.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * How a baseline is built: `portable`, the x86-64-v3 features the addon's `haswell` variant has (the
 * same kernels, so the ratio compares scoring strategies rather than compilers); `native`, as
 * llama.cpp builds by default (GGML_NATIVE: every instruction this processor has), which is what a
 * llama.cpp user runs.
 */
export type LlamaToolBuild = 'portable' | 'native';

/** llama.cpp's build settings for a baseline: static libraries, no OpenMP, no network code. */
export function llamaCmakeFlags(build: LlamaToolBuild = 'portable'): string[] {
  const flags = [
    '-DCMAKE_BUILD_TYPE=Release',
    '-DBUILD_SHARED_LIBS=OFF',
    '-DGGML_OPENMP=OFF',
    '-DGGML_CUDA=OFF',
    `-DGGML_NATIVE=${build === 'native' ? 'ON' : 'OFF'}`,
    '-DLLAMA_CURL=OFF',
    '-DLLAMA_OPENSSL=OFF',
    '-DLLAMA_BUILD_COMMON=ON',
    '-DLLAMA_BUILD_TOOLS=ON',
    '-DLLAMA_BUILD_TESTS=OFF',
    '-DLLAMA_BUILD_EXAMPLES=OFF',
    '-DLLAMA_BUILD_SERVER=ON',
  ];
  if (build === 'portable' && process.arch === 'x64') for (const f of ['AVX', 'AVX2', 'FMA', 'F16C', 'BMI2']) flags.push(`-DGGML_${f}=ON`);
  return flags;
}

/**
 * Path of a llama.cpp tool (llama-bench, llama-server) under build/bench-tools (build/bench-tools-native
 * for the native build), built from deps/llama.cpp. Both tools share one build folder per build. An existing build is brought
 * up to date first (a no-op when nothing changed), since `npm install` re-applies native/patches to
 * deps/llama.cpp and a baseline built before a patch would measure other kernels than its sources
 * say. A tool placed there without a build folder (the device pipeline links its own) is used as is.
 */
export function ensureLlamaTool(root: string, target: 'llama-bench' | 'llama-server', log: (msg: string) => void, build: LlamaToolBuild = 'portable'): string {
  const llamaDir = path.join(root, 'deps', 'llama.cpp');
  const buildDir = path.join(root, 'build', build === 'native' ? 'bench-tools-native' : 'bench-tools');
  const binary = path.join(buildDir, 'bin', target);
  const configured = fs.existsSync(path.join(buildDir, 'CMakeCache.txt'));
  if (fs.existsSync(binary) && !configured) return binary;
  if (!fs.existsSync(path.join(llamaDir, 'CMakeLists.txt'))) throw new Error(`llama.cpp source not found at ${llamaDir}; run \`npm install\` first`);
  if (!configured) {
    const generator = spawnSync('ninja', ['--version']).status === 0 ? ['-G', 'Ninja'] : [];
    log(`building ${target} (${build}) into ${buildDir} (one-off, several minutes)`);
    execFileSync('cmake', ['-S', llamaDir, '-B', buildDir, ...generator, ...llamaCmakeFlags(build)], { stdio: ['ignore', 'ignore', 'inherit'] });
  } else {
    log(`bringing ${target} in ${buildDir} up to date with deps/llama.cpp`);
  }
  execFileSync('cmake', ['--build', buildDir, '--target', target, '--parallel'], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (!fs.existsSync(binary)) throw new Error(`the ${target} build finished but ${binary} is missing`);
  return binary;
}

export interface LlamaBenchRun {
  command: string;
  /** Mean prompt-processing tokens/s over the repetitions. */
  tokensPerSecond: number;
  stddev: number;
  promptTokens: number;
  threads: number;
  repetitions: number;
  buildCommit: string;
  cpu: string;
}

export function runLlamaBench(binary: string, model: string, opts: { promptTokens: number; threads: number; repetitions: number }): LlamaBenchRun {
  const args = ['-m', model, '-p', String(opts.promptTokens), '-n', '0', '-t', String(opts.threads), '-r', String(opts.repetitions), '-o', 'json'];
  const out = execFileSync(binary, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 16 << 20 });
  const rows = JSON.parse(out) as Array<Record<string, unknown>>;
  const pp = rows.find((r) => Number(r.n_prompt) === opts.promptTokens && Number(r.n_gen) === 0);
  if (!pp) throw new Error(`llama-bench printed no prompt-processing row: ${out.slice(0, 500)}`);
  return {
    command: [binary, ...args].join(' '),
    tokensPerSecond: Number(pp.avg_ts),
    stddev: Number(pp.stddev_ts),
    promptTokens: opts.promptTokens,
    threads: Number(pp.n_threads),
    repetitions: opts.repetitions,
    buildCommit: String(pp.build_commit),
    cpu: String(pp.cpu_info),
  };
}

/** CPU seconds used by the whole machine and by this process with its waited-for children (Linux /proc; zeros elsewhere). */
export function cpuSeconds(): { machine: number; self: number } {
  try {
    const ticks = 100; // USER_HZ on every Linux that Node supports
    const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: busy = all but idle and iowait
    const machine = (cpu[0]! + cpu[1]! + cpu[2]! + cpu[5]! + cpu[6]! + cpu[7]!) / ticks;
    // /proc/self/stat fields after the command name: utime stime cutime cstime are fields 14..17
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const rest = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    const self = (rest[11]! + rest[12]! + rest[13]! + rest[14]!) / ticks;
    return { machine, self };
  } catch {
    return { machine: 0, self: 0 };
  }
}
