// Scoring goes from the HTTP workers straight to the engine service on the engine process's
// private socket; after the engine is killed and restarted the workers call its new socket (the
// killed engine's is removed). A worker that cannot reach the engine answers 503 with Retry-After
// at once, and says why in the log: it never holds a request waiting for an engine it cannot reach.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { cannotRun, startServer, type Reply, type Server } from '../integration/helpers/server.js';
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

/** Decisions on new connections (spread over the workers by the kernel): their statuses. */
async function decisions(server: Server, key: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await server.call('/v1/systemone', { body: BODY, key, fresh: true })).status);
  return statuses;
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const server = await startServer(t.testdir(), { workers: 2 });
  t.teardown(() => server.stop());
  const { secret } = await server.createKey('direct@example.com');

  t.test('decisions reach the engine without the primary', async (t) => {
    const pid = enginePid(server.pid);
    const socket = pid ? socketOf(pid) : null;
    t.ok(socket && fs.existsSync(socket), `the engine listens on its socket (${socket})`);
    t.equal(fs.statSync(socket!).mode & 0o777, 0o600, 'only its user may connect');
    t.same(await decisions(server, secret, 12), Array(12).fill(200), 'every worker answers');
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
    t.same(await decisions(server, secret, 12), Array(12).fill(200), 'both workers call the new engine');
  });

  t.test('a worker that cannot reach the engine answers 503 at once and says why', async (t) => {
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
    // The kernel spreads new connections over both workers: the surviving one still holds its
    // connection to the engine, the new one cannot make one.
    const replies: Reply[] = [];
    for (let i = 0; i < 60 && !replies.some((r) => r.status === 503); i++) {
      replies.push(await server.call('/v1/systemone', { body: BODY, key: secret, fresh: true, timeoutMs: 10_000 }));
    }
    const refused = replies.filter((r) => r.status === 503);
    t.ok(refused.length > 0, "the new worker's decisions were refused");
    t.ok(
      refused.every((r) => Number(r.headers.get('retry-after')) > 0),
      'with Retry-After',
    );
    t.same(
      replies.filter((r) => r.status !== 200 && r.status !== 503).map((r) => r.status),
      [],
      'every decision was answered, 200 or 503',
    );
    // Said once the primary still calls the engine ready a few seconds later: it did not just die.
    const said = /engine 0 at \S+ cannot be reached from this worker/;
    t.match(await server.logged(said), said, 'the worker says why');
  });
}
