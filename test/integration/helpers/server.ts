// The real `arbitra serve` as an operator runs it: a child process (its own process group, so the
// primary, its HTTP workers and the engine process can be killed together) on 127.0.0.1, a
// temporary LMDB data dir, the small test model, and keys made with the real CLI.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, groupAlive, waitGroupGone } from '../../../bench/lib/serve.js';
import { packageRoot } from '../../../src/paths.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { SMALL_LANES, TEST_MODEL } from '../../helpers/models.js';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.js';

// From the package root, not this file: bench/nodes.ts runs these helpers compiled, from dist/.
const root = packageRoot();
export const CLI = path.join(root, 'dist/src/cli/main.js');
export const MODEL_FILE = TEST_MODEL;
export const CONSOLE_TOKEN = 'integration-console-token-0123456789';

/**
 * ARBITRA_TEST_STORE=postgres (`npm run test:postgres`) runs every server these helpers start on a
 * real PostgreSQL, a fresh database each, instead of a fresh LMDB data dir.
 */
const ON_POSTGRES = process.env.ARBITRA_TEST_STORE === 'postgres';
const TEST_KEY_SECRET = 'integration-key-secret-0123456789abcdef';
let postgres: Promise<TestPostgres> | null = null;

async function freshPostgresDatabase(): Promise<string> {
  postgres ??= startPostgres().then(async (server) => {
    if (typeof server === 'string') throw new Error(`ARBITRA_TEST_STORE=postgres, but PostgreSQL cannot run here: ${server}`);
    // Stopped with the test file (its server process would otherwise keep the file running). tap is
    // loaded only here: the benches use these helpers too, outside tap.
    const { default: t } = await import('tap');
    t.teardown(() => server.stop());
    return server;
  });
  return (await postgres).freshDatabase();
}

/** Why the suite cannot run here, or false; pass as a test's `skip`. */
export const cannotRun: string | false = !fs.existsSync(CLI)
  ? 'dist/ is not built (npx tsc -p tsconfig.json)'
  : !fs.existsSync(MODEL_FILE)
    ? 'the default model is not downloaded'
    : false;

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body; null when it is empty or not JSON. */
  json: any;
}

export interface CallOptions {
  method?: string;
  /** An object is sent as JSON; a string is sent as is (content-type still application/json unless set). */
  body?: unknown;
  headers?: Record<string, string>;
  /** Bearer API key. */
  key?: string;
  /** A new connection per request, so the kernel spreads requests over the HTTP workers. */
  fresh?: boolean;
  /** Give up (the promise rejects) when no answer came within this many milliseconds. */
  timeoutMs?: number;
}

export interface Server {
  url: string;
  port: number;
  /** Where its state is: the LMDB data dir, or a PostgreSQL URL (ARBITRA_TEST_STORE=postgres). */
  store: string;
  /** The flag that names that store, for the CLI's commands (`--data-dir DIR` or `--store URL`). */
  storeArgs: string[];
  /** What a process opening that store needs in its environment (the key secret on PostgreSQL). */
  storeEnv: Record<string, string>;
  /** The same store, opened in this process. */
  openStore(): Promise<Store>;
  pid: number;
  /** The engine backend named in the listening line (cpu, cuda). */
  backend: string;
  call(path: string, opts?: CallOptions): Promise<Reply>;
  /** A new API key made with `arbitra keys create` against this data dir. */
  createKey(email: string, name?: string): Promise<{ id: string; secret: string }>;
  /** `arbitra keys revoke ID`. */
  revokeKey(id: string): Promise<void>;
  /** Console headers for a user of this server. */
  console(email: string): Record<string, string>;
  /** Everything the server wrote to stderr so far. */
  log(): string;
  /**
   * The log once it matches `pattern`, or as it stands after `ms`. Lines that follow the listening
   * line (the engine's path, its check, a warning) reach this process in their own time.
   */
  logged(pattern: RegExp, ms?: number): Promise<string>;
  /** SIGKILL to the whole process group (primary, workers, engine); resolves once it is gone. */
  kill9(): Promise<void>;
  /** SIGTERM, then SIGKILL after a grace period. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** HTTP workers; 0 is single-process (default 2). */
  workers?: number;
  /** ARBITRA_* variables on top of a clean environment (console token included unless null). */
  env?: Record<string, string>;
  consoleToken?: string | null;
  /** Reuse a store (restart after a crash); default a fresh data dir under `dir`, or a fresh database. */
  store?: string;
  /** More flags after the defaults (a later flag wins). */
  args?: string[];
  /**
   * The engine's KV cache: 'small' (SMALL_LANES) unless it is what is tested. The default pool is
   * written whole at every engine start, which beside another server on this VM is slow.
   */
  lanes?: 'small' | 'default';
}

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ARBITRA_') && !k.startsWith('TYPESAFE_')) env[k] = v;
  return env;
}

function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts `arbitra serve` under `dir` and resolves once it prints its listening line.
 * The caller stops it (t.teardown(server.stop)).
 */
export async function startServer(dir: string, opts: StartOptions = {}): Promise<Server> {
  // A test that names its own database (several nodes on one) keeps it.
  const onPostgres = ON_POSTGRES && !opts.env?.ARBITRA_STORE_URL;
  const store = opts.store ?? (onPostgres ? await freshPostgresDatabase() : fs.mkdtempSync(path.join(dir, 'data-')));
  const storeArgs = onPostgres ? ['--store', store] : ['--data-dir', store];
  const storeEnv: Record<string, string> = onPostgres ? { ARBITRA_KEY_SECRET: TEST_KEY_SECRET } : {};
  const port = await freePort();
  // The engine's determinism check adds about a second to every start on the test model, and the
  // self-test's ten scored branches run beside the test's first requests: a test that reads what
  // either found asks for it (ARBITRA_DETERMINISM_CHECK or ARBITRA_SELF_TEST: 'on').
  const env: NodeJS.ProcessEnv = { ...cleanEnv(), ARBITRA_DETERMINISM_CHECK: 'off', ARBITRA_SELF_TEST: 'off', ...storeEnv, ...(opts.env ?? {}) };
  if (opts.consoleToken !== null) env.ARBITRA_CONSOLE_TOKEN = opts.consoleToken ?? CONSOLE_TOKEN;
  const workers = opts.workers ?? 2;
  const child = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--model',
      MODEL_FILE,
      ...(opts.lanes === 'default' ? [] : SMALL_LANES),
      ...storeArgs,
      '--port',
      String(port),
      '--workers',
      String(workers),
      ...(opts.args ?? []),
    ],
    {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    },
  );
  const pgid = child.pid!;
  let log = '';
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within 180 s:\n${log}`)), 180_000);
    child.stderr.on('data', (c: Buffer) => {
      log += c.toString();
      const m = /^arbitra listening on .*$/m.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[0]);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`arbitra serve exited (${signal ?? code}) before listening:\n${log}`));
    });
  });
  // Keep draining stderr so a chatty server never blocks on a full pipe.
  child.stderr.resume();
  const url = /http:\/\/\S+/.exec(line)![0];

  let stopped: Promise<void> | null = null;
  const server: Server = {
    url,
    port,
    store,
    storeArgs,
    storeEnv,
    openStore: () => openStore(store, { keySecret: storeEnv.ARBITRA_KEY_SECRET }),
    pid: pgid,
    backend: /backend (\w+)/.exec(line)?.[1] ?? 'unknown',
    async call(p, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.key !== undefined) headers.authorization = `Bearer ${o.key}`;
      if (o.fresh) headers.connection = 'close';
      let body: string | undefined;
      if (o.body !== undefined) {
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
        if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
      }
      const signal = o.timeoutMs === undefined ? undefined : AbortSignal.timeout(o.timeoutMs);
      const res = await fetch(url + p, { method: o.method ?? (body === undefined ? 'GET' : 'POST'), headers, body, signal });
      const text = await res.text();
      let json: any = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = null;
      }
      return { status: res.status, headers: res.headers, text, json };
    },
    async createKey(email, name) {
      const r = await runCli(['keys', 'create', '--email', email, ...storeArgs, ...(name ? ['--name', name] : [])], storeEnv);
      if (r.code !== 0) throw new Error(`keys create failed: ${r.stderr}`);
      const id = /created key (\S+)/.exec(r.stderr)?.[1];
      if (!id) throw new Error(`keys create printed no id: ${r.stderr}`);
      return { id, secret: r.stdout.split('\n')[0]!.trim() };
    },
    async revokeKey(id) {
      const r = await runCli(['keys', 'revoke', id, ...storeArgs], storeEnv);
      if (r.code !== 0) throw new Error(`keys revoke failed: ${r.stderr}`);
    },
    log: () => log,
    async logged(pattern, ms = 15_000) {
      for (const end = Date.now() + ms; !pattern.test(log) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 100));
      return log;
    },
    console: (email) => ({ 'x-arbitra-console-token': opts.consoleToken ?? CONSOLE_TOKEN, 'x-arbitra-user-email': email }),
    async kill9() {
      if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
      await exited(child);
      await waitGroupGone(pgid, 10_000);
      stopped = Promise.resolve();
    },
    stop() {
      stopped ??= (async () => {
        if (!groupAlive(pgid)) return;
        process.kill(-pgid, 'SIGTERM');
        if (!(await waitGroupGone(pgid, 15_000))) {
          process.kill(-pgid, 'SIGKILL');
          await waitGroupGone(pgid, 5_000);
        }
        await exited(child);
      })();
      return stopped;
    },
  };
  return server;
}

export interface EngineNode {
  /** tcp://127.0.0.1:PORT (tls:// with a certificate) */
  address: string;
  port: number;
  pid: number;
  log(): string;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `arbitra engine --listen 127.0.0.1:PORT` with the test model, small caches and one thread (API
 * nodes elsewhere reach it with `--engines`). `env` carries ARBITRA_ENGINE_SECRET and the rest; as
 * startServer's, it checks determinism at load only when `env` asks (ARBITRA_DETERMINISM_CHECK: 'on').
 */
export async function startEngineNode(env: Record<string, string>, opts: { port?: number; args?: string[] } = {}): Promise<EngineNode> {
  const port = opts.port ?? (await freePort());
  const args = [
    'engine',
    '--listen',
    `127.0.0.1:${port}`,
    '--model',
    MODEL_FILE,
    '--threads',
    '1',
    '--ctx-size',
    '1024',
    '--max-sequences',
    '8',
    '--long-ctx-size',
    '0',
    ...(opts.args ?? []),
  ];
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...cleanEnv(), ARBITRA_SELF_TEST: 'off', ARBITRA_DETERMINISM_CHECK: 'off', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no engine listening line within 120 s:\n${log}`)), 120_000);
    child.stderr.on('data', (c: Buffer) => {
      log += c.toString();
      const m = /^arbitra engine listening on (\S+)/m.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`arbitra engine exited (${signal ?? code}) before listening:\n${log}`));
    });
  });
  child.stderr.resume();
  const stopWith = async (signal: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited(child);
  };
  return { address, port, pid: child.pid!, log: () => log, kill9: () => stopWith('SIGKILL'), stop: () => stopWith('SIGTERM') };
}

/** Whether `what` comes true within `ms`: asked at once, every `everyMs` after, and at the end. */
export async function until(what: () => Promise<boolean>, ms = 60_000, everyMs = 200): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await what()) return true;
    const left = end - Date.now();
    if (left <= 0) return false;
    await new Promise((r) => setTimeout(r, Math.min(everyMs, left)));
  }
}

/** Resolves just after the next whole second, so per-second windows start fresh. */
export async function nextSecond(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1005 - (Date.now() % 1000)));
}

/** Sum of every sample of a Prometheus metric whose labels contain all of `labels`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | null {
  let total: number | null = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)$/.exec(line.trim());
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) total = (total ?? 0) + Number(m[4]);
  }
  return total;
}
