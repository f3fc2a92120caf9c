// `arbitra serve` for the load benches: a child in its own process group on a free port and a fresh
// data dir, with a console token so a bench can make keys over HTTP the way the console does.
// Every wait is bounded: a server that never listens fails the bench instead of hanging it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../../src/paths.js';
import { call, json } from './http.js';

const root = packageRoot();
const cliOf = (checkout: string): string => path.join(checkout, 'dist', 'src', 'cli', 'main.js');
const CONSOLE_TOKEN = 'bench-console-token-0123456789';
const LISTEN_TIMEOUT_MS = 300_000;
const STOP_GRACE_MS = 15_000;
const LOG_LINES = 400;

export interface ServeOptions {
  /** A catalogue name or a GGUF path, passed to --model. */
  model: string;
  workers: number;
  /** Further flags of `arbitra serve`. */
  args?: readonly string[];
  /** ARBITRA_* variables on top of this process's environment. */
  env?: Record<string, string>;
  /** Another checkout whose build to serve, a baseline; default this one. */
  checkout?: string;
}

export interface Served {
  url: string;
  /** The primary's pid, which is also the process group's id. */
  pid: number;
  /** The command line as an operator would type it (for RESULTS.md). */
  command: string;
  /** The last lines the server logged. */
  log(): string[];
  consoleHeaders(email: string): Record<string, string>;
  /** A new API key for `email`, made through the console route; returns its id and secret. */
  createKey(email: string, name: string): Promise<{ id: string; key: string }>;
  /** SIGTERM to the group, SIGKILL after a grace period; removes the data dir. */
  stop: () => Promise<void>;
}

/** A port free on loopback right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until no process of the group is left; false when some still run after `ms`. */
export async function waitGroupGone(pgid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (groupAlive(pgid)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** The server's log lines worth a look after a run (exits, restarts, errors, warnings), each also logged. */
export function serverNotes(server: Served, log: (msg: string) => void): string[] {
  const notes = server.log().filter((l) => /exited|restart|error|warn/i.test(l));
  for (const l of notes) log(`server: ${l}`);
  return notes;
}

export async function serve(opts: ServeOptions): Promise<Served> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-bench-'));
  const port = await freePort();
  const args = ['serve', '--port', String(port), '--data-dir', dataDir, '--model', opts.model, '--workers', String(opts.workers), ...(opts.args ?? [])];
  const extra = { ARBITRA_CONSOLE_TOKEN: CONSOLE_TOKEN, ...(opts.env ?? {}) };
  const child = spawn(process.execPath, [cliOf(opts.checkout ?? root), ...args], {
    env: { ...process.env, ...extra },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  const pid = child.pid!;
  const lines: string[] = [];
  let partial = '';
  child.stderr.on('data', (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    lines.splice(0, Math.max(0, lines.length - LOG_LINES));
  });
  const stop = async (): Promise<void> => {
    if (groupAlive(pid)) {
      process.kill(-pid, 'SIGTERM');
      if (!(await waitGroupGone(pid, STOP_GRACE_MS))) {
        process.kill(-pid, 'SIGKILL');
        await waitGroupGone(pid, 5_000);
      }
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`arbitra serve did not listen within ${LISTEN_TIMEOUT_MS / 1000} s:\n${lines.join('\n')}`)),
      LISTEN_TIMEOUT_MS,
    );
    const poll = setInterval(() => {
      if (lines.some((l) => l.includes('listening on'))) done(resolve);
    }, 100);
    const done = (then: () => void): void => {
      clearTimeout(timer);
      clearInterval(poll);
      child.off('exit', onExit);
      then();
    };
    const onExit = (code: number | null, signal: string | null): void =>
      done(() => reject(new Error(`arbitra serve exited (${signal ?? code}) before listening:\n${lines.join('\n')}${partial}`)));
    child.once('exit', onExit);
  }).catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  const url = `http://127.0.0.1:${port}`;
  const consoleHeaders = (email: string): Record<string, string> => ({ 'x-arbitra-console-token': CONSOLE_TOKEN, 'x-arbitra-user-email': email });
  return {
    url,
    pid,
    command: [
      ...Object.entries(extra)
        .filter(([k]) => k !== 'ARBITRA_CONSOLE_TOKEN')
        .map(([k, v]) => `${k}=${v}`),
      'node dist/src/cli/main.js',
      ...args.map((a) => (a === dataDir ? '<fresh dir>' : path.isAbsolute(a) ? path.relative(root, a) : a)),
    ].join(' '),
    log: () => [...lines],
    consoleHeaders,
    async createKey(email, name) {
      const r = await call(`${url}/v1/console/api-keys`, { headers: consoleHeaders(email), body: { name }, timeoutMs: 30_000 });
      const body = json(r);
      if (r.status !== 200 || typeof body?.key !== 'string') throw new Error(`creating a key for ${email} answered ${r.status}: ${r.text.slice(0, 300)}`);
      return { id: body.id as string, key: body.key as string };
    },
    stop,
  };
}
