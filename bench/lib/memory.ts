// Resident memory of the processes a bench starts, read from /proc (Linux), and the engine's KV
// bytes: what an operator has to provision beside the tokens/s.
import fs from 'node:fs';

const MiB = 1024 * 1024;

/** VmRSS of a process in bytes; 0 when it is gone or /proc is not there. */
export function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The largest resident process of a process group (a server's engine process), in bytes. */
export function largestInGroup(pgid: number): number {
  let largest = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Fields after the command's closing parenthesis: state, ppid, pgrp, ...
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid) largest = Math.max(largest, rssBytes(Number(entry)));
    } catch {
      // the process ended while we looked
    }
  }
  return largest;
}

export const mib = (bytes: number): number => bytes / MiB;
