// The engine socket over a real Unix socket, with a fake engine behind it: results cross exactly,
// the tenant travels with the request, a cancel and a closed connection both abort the engine's
// work, an engine that goes away fails what was waiting with `unavailable`, and a bad frame closes
// only its own connection.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { connectEngineSocket, serveEngineSocket } from '../../src/engine/socket.js';
import { encodeFrame } from '../../src/engine/wire.js';
import { EngineError, type EngineService, type TextScoreRequest, type TextScoreResult } from '../../src/engine/types.js';

const REQUEST: TextScoreRequest = { system: null, prefix: 'state\n', branches: [{ suffix: 'q?', answers: [[1, 2], [3]] }], maxPromptTokens: 100, tenant: 'key_a' };

const RESULT: TextScoreResult = { branches: [[-0.1053605156578263, -2.3025850929940455]], promptTokens: 12, prefixTokens: 8, evaluatedTokens: 12, cachedTokens: 0 };

if (process.platform === 'win32') {
  t.plan(0, 'the engine socket is a Unix socket; Windows keeps the relay');
} else {
  /** A fake engine whose scoreText waits until the test settles it or its signal aborts. */
  function fakeEngine() {
    const calls: { request: TextScoreRequest; signal: AbortSignal; settle: (r: TextScoreResult | Error) => void }[] = [];
    const aborted: string[] = [];
    const engine: Pick<EngineService, 'scoreText'> = {
      scoreText: (request, signal) =>
        new Promise((resolve, reject) => {
          signal!.addEventListener('abort', () => {
            aborted.push(request.prefix);
            reject(new EngineError('cancelled', 'the request was cancelled'));
          });
          calls.push({ request, signal: signal!, settle: (r) => (r instanceof Error ? reject(r) : resolve(r)) });
        }),
    };
    return { engine, calls, aborted };
  }

  const until = async (what: () => boolean, ms = 2000): Promise<boolean> => {
    for (const end = Date.now() + ms; Date.now() < end; ) {
      if (what()) return true;
      await new Promise((r) => setTimeout(r, 5));
    }
    return what();
  };

  t.test('the socket is private and removed on close', async (t) => {
    const server = await serveEngineSocket(fakeEngine().engine, () => {});
    t.equal(fs.statSync(server.path).mode & 0o777, 0o600, 'socket 0600');
    t.equal(fs.statSync(path.dirname(server.path)).mode & 0o777, 0o700, 'its directory 0700');
    t.match(path.basename(path.dirname(server.path)), new RegExp(`^arbitra-engine-${process.pid}-`), 'the directory names the engine pid');
    server.close();
    t.notOk(fs.existsSync(path.dirname(server.path)), 'socket and directory are gone');
    await t.rejects(connectEngineSocket(server.path), { code: 'ENOENT' }, 'a client cannot connect any more (the client then relays)');
  });

  t.test('sockets of engines that died with their host are removed at start; live ones stay', async (t) => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const dir = (pid: number, tag: string): string => fs.mkdtempSync(path.join(os.tmpdir(), `arbitra-engine-${pid}-${tag}`));
    // A socket file nobody listens on refuses connections, as a killed engine's does.
    const orphan = dir(dead, 'orphan');
    fs.writeFileSync(path.join(orphan, 'engine.sock'), '');
    const emptyOrphan = dir(dead, 'empty');
    // A pid that means nothing here, but a live socket: an engine of another pid namespace sharing /tmp.
    const elsewhere = dir(dead, 'elsewhere');
    const listener = net.createServer();
    await new Promise<void>((r) => listener.listen(path.join(elsewhere, 'engine.sock'), r));
    const living = dir(process.ppid, 'living');
    fs.writeFileSync(path.join(living, 'engine.sock'), '');
    t.teardown(() => {
      listener.close();
      for (const d of [orphan, emptyOrphan, elsewhere, living]) fs.rmSync(d, { recursive: true, force: true });
    });
    const server = await serveEngineSocket(fakeEngine().engine, () => {});
    server.close();
    t.notOk(fs.existsSync(orphan), "a dead engine's socket and directory are removed");
    t.notOk(fs.existsSync(emptyOrphan), 'so is a dead engine directory without its socket');
    t.ok(fs.existsSync(path.join(elsewhere, 'engine.sock')), 'a socket that answers stays, whatever its pid');
    t.ok(fs.existsSync(path.join(living, 'engine.sock')), 'a running pid keeps its directory');
  });

  t.test('a result crosses exactly, and the tenant with the request', async (t) => {
    const fake = fakeEngine();
    const server = await serveEngineSocket(fake.engine, () => {});
    t.teardown(() => server.close());
    const conn = await connectEngineSocket(server.path);
    t.teardown(() => conn.close());
    const answer = conn.score(REQUEST);
    t.ok(await until(() => fake.calls.length === 1));
    t.same(fake.calls[0]!.request, REQUEST, 'the request arrives whole, tenant included');
    fake.calls[0]!.settle(RESULT);
    const got = await answer;
    t.same(got, RESULT);
    t.ok(Object.is(got.branches[0]![0], RESULT.branches[0]![0]), 'the log-prob is the same double');
  });

  t.test('answers are matched by id, in whatever order they finish', async (t) => {
    const fake = fakeEngine();
    const server = await serveEngineSocket(fake.engine, () => {});
    t.teardown(() => server.close());
    const conn = await connectEngineSocket(server.path);
    t.teardown(() => conn.close());
    const answers = [0, 1, 2].map((i) => conn.score({ ...REQUEST, prefix: `p${i}` }));
    t.ok(await until(() => fake.calls.length === 3));
    for (const i of [2, 0, 1]) fake.calls[i]!.settle({ ...RESULT, promptTokens: i });
    t.same((await Promise.all(answers)).map((r) => r.promptTokens), [0, 1, 2]);
  });

  t.test('an engine error keeps its code, message and details', async (t) => {
    const fake = fakeEngine();
    const server = await serveEngineSocket(fake.engine, () => {});
    t.teardown(() => server.close());
    const conn = await connectEngineSocket(server.path);
    t.teardown(() => conn.close());
    const answer = conn.score(REQUEST);
    t.ok(await until(() => fake.calls.length === 1));
    fake.calls[0]!.settle(new EngineError('context_exceeded', 'too long', { tokens: 9, limit: 4 }));
    await t.rejects(answer, { name: 'EngineError', code: 'context_exceeded', message: 'too long', details: { tokens: 9, limit: 4 } });
  });

  t.test('a cancel reaches the engine and rejects at once', async (t) => {
    const fake = fakeEngine();
    const server = await serveEngineSocket(fake.engine, () => {});
    t.teardown(() => server.close());
    const conn = await connectEngineSocket(server.path);
    t.teardown(() => conn.close());
    const aborter = new AbortController();
    const answer = conn.score({ ...REQUEST, prefix: 'gone' }, aborter.signal);
    const other = conn.score({ ...REQUEST, prefix: 'stays' });
    t.ok(await until(() => fake.calls.length === 2));
    aborter.abort();
    await t.rejects(answer, { code: 'cancelled' });
    t.ok(await until(() => fake.aborted.length > 0), 'the engine saw the abort');
    t.same(fake.aborted, ['gone'], 'only that request was aborted');
    fake.calls[1]!.settle(RESULT);
    t.same(await other, RESULT, 'the connection serves on');
  });

  t.test('a connection that closes (its worker died) aborts its jobs in the engine, and only its own', async (t) => {
    const fake = fakeEngine();
    const server = await serveEngineSocket(fake.engine, () => {});
    t.teardown(() => server.close());
    const dying = await connectEngineSocket(server.path);
    const living = await connectEngineSocket(server.path);
    t.teardown(() => living.close());
    const lost = dying.score({ ...REQUEST, prefix: 'a' });
    const lost2 = dying.score({ ...REQUEST, prefix: 'b' });
    const kept = living.score({ ...REQUEST, prefix: 'c' });
    t.ok(await until(() => fake.calls.length === 3));
    dying.close();
    await t.rejects(lost, { code: 'unavailable' });
    await t.rejects(lost2, { code: 'unavailable' });
    t.ok(dying.closed);
    t.ok(await until(() => fake.aborted.length === 2), 'both jobs were aborted');
    t.same(fake.aborted.sort(), ['a', 'b']);
    fake.calls.find((c) => c.request.prefix === 'c')!.settle(RESULT);
    t.same(await kept, RESULT);
  });

  t.test('an engine that goes away fails what was waiting with unavailable', async (t) => {
    // Not t.testdir(): a socket path must stay under about 100 bytes.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-socket-test-'));
    const file = path.join(dir, 's.sock');
    const server = net.createServer((c) => c.once('data', () => c.destroy()));
    await new Promise<void>((r) => server.listen(file, r));
    const conn = await connectEngineSocket(file);
    t.teardown(() => {
      conn.close();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    await t.rejects(conn.score(REQUEST), { name: 'EngineError', code: 'unavailable', message: /engine process stopped/ });
    t.ok(conn.closed, 'the connection says so, so the client reconnects or relays');
    await t.rejects(conn.score(REQUEST), { code: 'unavailable' }, 'a later request on it is refused, not lost');
  });

  t.test('a frame over the limit closes that connection with a clear log line; the engine serves on', async (t) => {
    const fake = fakeEngine();
    const lines: string[] = [];
    const server = await serveEngineSocket(fake.engine, (l) => lines.push(l));
    t.teardown(() => server.close());
    const raw = net.createConnection(server.path);
    await new Promise((r) => raw.once('connect', r));
    const closed = new Promise((r) => raw.once('close', r));
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32LE(0xffffffff);
    raw.write(prefix);
    await closed;
    t.match(lines, [/^engine socket: a frame of 4294967295 bytes exceeds the limit of \d+ bytes; closing the connection$/]);
    const conn = await connectEngineSocket(server.path);
    t.teardown(() => conn.close());
    const answer = conn.score(REQUEST);
    t.ok(await until(() => fake.calls.length === 1));
    fake.calls[0]!.settle(RESULT);
    t.same(await answer, RESULT, 'another connection is answered');
  });

  t.test('a message that is not part of the protocol closes the connection', async (t) => {
    const lines: string[] = [];
    const server = await serveEngineSocket(fakeEngine().engine, (l) => lines.push(l));
    t.teardown(() => server.close());
    const raw = net.createConnection(server.path);
    await new Promise((r) => raw.once('connect', r));
    const closed = new Promise((r) => raw.once('close', r));
    raw.write(encodeFrame({ t: 'shutdown', id: 1 }));
    await closed;
    t.match(lines, [/unexpected message \(shutdown, id 1\)/]);
  });
}
