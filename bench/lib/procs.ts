// The processes of one `arbitra serve` read from Linux /proc: the primary, its HTTP workers (forked
// by node:cluster, same command line as the primary) and the engine process (process-main.js); and
// the CPU time of a process tree (a server, an engine, a database), for CPU per decision.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { seriesSummary, type SeriesSummary } from './stats.js';

export type Role = 'primary' | 'worker' | 'engine';

export interface ProcessSample {
  pid: number;
  role: Role;
  rssMb: number;
}

/** The parent pid from the text of /proc/PID/stat (the command name may hold spaces and parentheses). */
export function parentPid(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Resident memory in MiB from the text of /proc/PID/status; NaN when it has no VmRSS (a zombie). */
export function rssMb(status: string): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

export function roleOf(cmdline: string): Exclude<Role, 'primary'> {
  return cmdline.includes('process-main.js') ? 'engine' : 'worker';
}

const read = (file: string): string | null => {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
};

/** The direct children of `pid` (a scan of /proc: /proc/PID/task/*\/children needs a kernel option). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = read(`/proc/${name}/stat`);
    if (stat && parentPid(stat) === pid) found.push(Number(name));
  }
  return found;
}

/** The primary and its children with their resident memory now; a process that vanished mid-scan is left out. */
export function sampleServer(primary: number): ProcessSample[] {
  const samples: ProcessSample[] = [];
  const add = (pid: number, role: Role): void => {
    const status = read(`/proc/${pid}/status`);
    const mb = status === null ? NaN : rssMb(status);
    if (!Number.isNaN(mb)) samples.push({ pid, role, rssMb: mb });
  };
  add(primary, 'primary');
  for (const pid of childrenOf(primary)) {
    const cmdline = read(`/proc/${pid}/cmdline`);
    if (cmdline !== null) add(pid, roleOf(cmdline.replaceAll('\0', ' ')));
  }
  return samples;
}

/** The pids of one role now, lowest first. */
export function pidsOf(primary: number, role: Role): number[] {
  return sampleServer(primary)
    .filter((s) => s.role === role)
    .map((s) => s.pid)
    .sort((a, b) => a - b);
}

export interface ProcessMemory {
  pid: number;
  role: Role;
  /** Seconds into the run of the first and last sample that saw the process. */
  firstSeenS: number;
  lastSeenS: number;
  rssMb: SeriesSummary;
}

/** Per process (a restarted worker or engine is a new pid and a new row), its RSS at start, at most and at the end. */
export function memoryByProcess(timeline: readonly { atS: number; samples: readonly ProcessSample[] }[]): ProcessMemory[] {
  const byPid = new Map<number, { role: Role; at: number[]; mb: number[] }>();
  for (const { atS, samples } of timeline) {
    for (const s of samples) {
      const row = byPid.get(s.pid) ?? { role: s.role, at: [], mb: [] };
      row.at.push(atS);
      row.mb.push(s.rssMb);
      byPid.set(s.pid, row);
    }
  }
  const order: Record<Role, number> = { primary: 0, worker: 1, engine: 2 };
  return [...byPid.entries()]
    .map(([pid, r]) => ({ pid, role: r.role, firstSeenS: r.at[0]!, lastSeenS: r.at[r.at.length - 1]!, rssMb: seriesSummary(r.mb) }))
    .sort((a, b) => order[a.role] - order[b.role] || a.firstSeenS - b.firstSeenS || a.pid - b.pid);
}

/** Clock ticks of CPU from the text of /proc/PID/stat: the process's own (utime + stime) and its reaped children's (cutime + cstime). */
export function cpuTicks(stat: string): number {
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return f[11]! + f[12]! + f[13]! + f[14]!;
}

/** The kernel's clock ticks per second (USER_HZ), which /proc/PID/stat counts in. */
export function ticksPerSecond(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/**
 * CPU seconds used so far by `root` and every process below it, the exited ones included (a parent
 * that reaped them counts them as its children's time). Differences between two readings are what
 * the tree used in between, whichever of its processes came and went.
 */
export function treeCpuSeconds(root: number, hz: number): number {
  const stats = new Map<number, string>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = read(`/proc/${name}/stat`);
    if (stat) stats.set(Number(name), stat);
  }
  let ticks = 0;
  for (const [pid, stat] of stats) {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
      if (p === root) {
        ticks += cpuTicks(stat);
        break;
      }
      const s = stats.get(p);
      if (!s) break;
      p = parentPid(s);
    }
  }
  return ticks / hz;
}

/** The lowest pid whose command line (its arguments) satisfies `match`, or null. */
export function findProcess(match: (argv: string[]) => boolean): number | null {
  const pids = fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .sort((a, b) => a - b);
  for (const pid of pids) {
    const cmdline = read(`/proc/${pid}/cmdline`);
    if (cmdline && match(cmdline.split('\0').filter(Boolean))) return pid;
  }
  return null;
}
