// Scoring goes from the HTTP workers straight to the engine process's socket, not through the
// primary: the primary's count of relayed requests stays 0 while every worker answers decisions,
// and stays 0 after the engine is killed and restarted (the workers connect to the new socket; the
// killed engine's is removed). A worker that cannot reach the socket relays through the primary,
// and the count shows it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { cannotRun, metricValue, startServer, type Server } from '../integration/helpers/server.js';
import { serveChildren } from './processes.js';

const BODY = { state: 'The invoice was paid twice.', questions: { q: { instructions: 'Is this about money?' } } };
const RESTART_WITHIN_MS = 60_000;

function enginePid(primary: number): number | null {
  return serveChildren(primary).find((c) => c.engine)?.pid ?? null;
}

/** The engine process's socket: `arbitra-engine-<pid>-*` in the temp dir. */
function socketOf(pid: number): string | null {
  const dirs = fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith(`arbitra-engine-${pid}-`));
  return dirs.length === 1 ? path.join(os.tmpdir(), dirs[0]!, 'engine.sock') : null;
}

async function relayed(server: Server): Promise<number | null> {
  return metricValue((await server.call('/metrics')).text, 'arbitra_engine_relayed_requests_total');
}

/** Decisions on new connections (spread over the workers by the kernel): their statuses. */
async function decisions(server: Server, key: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await server.call('/v1/systemone', { body: BODY, key, fresh: true })).status);
  return statuses;
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else if (process.platform === 'win32') {
  t.plan(0, 'the engine socket is a Unix socket; Windows keeps the relay');
} else {
  const server = await startServer(t.testdir(), { workers: 2 });
  t.teardown(() => server.stop());
  const { secret } = await server.createKey('direct@example.com');

  t.test('decisions reach the engine without the primary', async (t) => {
    const pid = enginePid(server.pid);
    const socket = pid ? socketOf(pid) : null;
    t.ok(socket && fs.existsSync(socket), `the engine listens on its socket (${socket})`);
    t.equal(fs.statSync(socket!).mode & 0o777, 0o600, 'only its user may connect');
    t.same(await decisions(server, secret, 12), Array(12).fill(200));
    t.equal(await relayed(server), 0, 'no scoring request went through the primary');
  });

  t.test('a killed engine is replaced; the workers connect to its new socket', async (t) => {
    const pid = enginePid(server.pid)!;
    const old = socketOf(pid)!;
    process.kill(pid, 'SIGKILL');
    let back = false;
    for (const end = Date.now() + RESTART_WITHIN_MS; !back && Date.now() < end; ) {
      back = (await server.call('/v1/systemone', { body: BODY, key: secret })).status === 200;
      if (!back) await new Promise((r) => setTimeout(r, 200));
    }
    t.ok(back, 'decisions work again');
    const now = enginePid(server.pid);
    t.ok(now && now !== pid, 'a new engine process runs');
    t.notOk(fs.existsSync(path.dirname(old)), "the killed engine's socket and directory were removed");
    t.ok(socketOf(now!) && fs.existsSync(socketOf(now!)!), 'the new engine listens on a socket of its own');
    t.same(await decisions(server, secret, 12), Array(12).fill(200));
    t.equal(await relayed(server), 0, 'both workers send to the new engine directly');
  });

  t.test('a worker that cannot reach the socket relays through the primary', async (t) => {
    // The engine keeps its listening socket; only its path is gone, so a new connection fails.
    fs.rmSync(socketOf(enginePid(server.pid)!)!);
    const worker = serveChildren(server.pid).find((c) => !c.engine)!;
    process.kill(worker.pid, 'SIGKILL');
    let replaced = false;
    for (const end = Date.now() + RESTART_WITHIN_MS; !replaced && Date.now() < end; ) {
      await new Promise((r) => setTimeout(r, 200));
      const workers = serveChildren(server.pid).filter((c) => !c.engine);
      replaced = workers.length === 2 && !workers.some((w) => w.pid === worker.pid);
    }
    t.ok(replaced, 'the killed worker was replaced');
    // Until the new worker is listening, the other one answers; the kernel spreads new connections over both.
    const statuses: number[] = [];
    let count: number | null = 0;
    for (let i = 0; i < 60 && count === 0; i++) {
      statuses.push(...(await decisions(server, secret, 2)));
      count = await relayed(server);
    }
    t.ok(count !== null && count > 0, `the new worker's decisions were relayed (${count})`);
    t.same(statuses.filter((s) => s !== 200), [], 'and answered');
    t.match(server.log(), /engine 0 socket \S+ unreachable \(.*ENOENT.*\); its scoring requests go through the primary/, 'the worker says why');
  });
}
