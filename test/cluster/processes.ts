// The processes of a running `arbitra serve`, read from ps: its primary's children are the HTTP
// workers and the engine process (the one running src/engine/process-main.js).
import { execFileSync } from 'node:child_process';

export interface ServeChild {
  pid: number;
  engine: boolean;
}

export function serveChildren(primary: number): ServeChild[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' }).split('\n');
  return rows.flatMap((row) => {
    const [pid, ppid, ...args] = row.trim().split(/\s+/);
    return Number(ppid) === primary ? [{ pid: Number(pid), engine: args.join(' ').includes('process-main.js') }] : [];
  });
}
