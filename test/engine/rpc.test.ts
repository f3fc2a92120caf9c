// The engine service on a real Unix socket, with a fake engine behind it: the socket is private,
// results cross exactly and the tenant with the request, answers are matched to their calls, an
// engine error keeps its code and details, and a job ends the same way in the engine whichever way
// its caller let go: a cancel, the deadline, or the caller's process dying. An engine that goes
// away fails what was waiting with `unavailable`; counters and the standard health check cross.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { packageRoot } from '../../src/paths.js';
import { openEngineChannel } from '../../src/engine/rpc/client.js';
import { serveEngine, type ServedEngine } from '../../src/engine/rpc/server.js';
import { privateSocketPath, removeEngineSocket } from '../../src/engine/rpc/socket-dir.js';
import { EngineError, type EngineInfo, type EngineStats, type TextScoreRequest, type TextScoreResult } from '../../src/engine/types.js';

const REQUEST: TextScoreRequest = {
  system: null,
  prefix: 'state\n',
  branches: [{ suffix: 'q?', answers: [[1, 2], [3]] }],
  maxPromptTokens: 100,
  tenant: 'key_a',
  cacheScope: 'usr_a',
};
const RESULT: TextScoreResult = {
  branches: [[-0.1053605156578263, -2.3025850929940455]],
  promptTokens: 12,
  prefixTokens: 8,
  evaluatedTokens: 12,
  cachedTokens: 0,
};
const INFO = { path: '/models/m.gguf', backend: 'cpu' } as EngineInfo;

/** A fake engine whose scoreText waits until the test settles it or its signal aborts. */
function fakeEngine(stats: Partial<EngineStats> = {}) {
  const calls: { request: TextScoreRequest; signal: AbortSignal; settle: (r: TextScoreResult | Error) => void }[] = [];
  const aborted: string[] = [];
  const engine: ServedEngine = {
    info: async () => INFO,
    stats: () => ({ queueDepth: 0, wedged: false, ...stats }) as EngineStats,
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

const until = async (what: () => boolean, ms = 5000): Promise<boolean> => {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (what()) return true;
    await new Promise((r) => setTimeout(r, 5));
  }
  return what();
};

/** An engine service on a fresh private socket, and a channel to it; both closed with the test. */
async function served(t: Test, engine: ServedEngine, log: (line: string) => void = () => {}) {
  const socket = await privateSocketPath();
  const server = await serveEngine(engine, { path: socket }, log);
  const channel = openEngineChannel(server.address);
  t.teardown(async () => {
    channel.close();
    await server.close();
    removeEngineSocket(socket);
  });
  return { socket, server, channel };
}

t.test('the socket is private, and gone once closed', async (t) => {
  const socket = await privateSocketPath();
  const server = await serveEngine(fakeEngine().engine, { path: socket }, () => {});
  t.equal(server.address, socket);
  t.equal(fs.statSync(socket).mode & 0o777, 0o600, 'socket 0600');
  t.equal(fs.statSync(path.dirname(socket)).mode & 0o777, 0o700, 'its directory 0700');
  t.match(path.basename(path.dirname(socket)), new RegExp(`^arbitra-engine-${process.pid}-`), 'the directory names the engine pid');
  await server.close();
  removeEngineSocket(socket);
  t.notOk(fs.existsSync(path.dirname(socket)), 'socket and directory are gone');
  const channel = openEngineChannel(socket);
  await t.rejects(channel.score(REQUEST), { name: 'EngineError', code: 'unavailable' }, 'a call is answered unavailable, not left waiting');
  channel.close();
});

t.test('sockets of engines that died with their host are removed at start; live ones stay', async (t) => {
  const dead = spawnSync(process.execPath, ['-e', '']).pid;
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
  removeEngineSocket(await privateSocketPath());
  t.notOk(fs.existsSync(orphan), "a dead engine's socket and directory are removed");
  t.notOk(fs.existsSync(emptyOrphan), 'so is a dead engine directory without its socket');
  t.ok(fs.existsSync(path.join(elsewhere, 'engine.sock')), 'a socket that answers stays, whatever its pid');
  t.ok(fs.existsSync(path.join(living, 'engine.sock')), 'a running pid keeps its directory');
});

t.test('a result crosses exactly, and the tenant with the request', async (t) => {
  const fake = fakeEngine();
  const { channel } = await served(t, fake.engine);
  const answer = channel.score(REQUEST);
  t.ok(await until(() => fake.calls.length === 1));
  t.same(fake.calls[0]!.request, REQUEST, 'the request arrives whole, tenant and cache scope included');
  fake.calls[0]!.settle(RESULT);
  const got = await answer;
  t.same(got, RESULT);
  t.ok(Object.is(got.branches[0]![0], RESULT.branches[0]![0]), 'the log-prob is the same double');
  t.same(await channel.info(1000), INFO, 'the facts cross');
});

t.test('a system text, the cost admission and the token cap travel with the request', async (t) => {
  const fake = fakeEngine();
  const { channel } = await served(t, fake.engine);
  const answer = channel.score({ ...REQUEST, system: '', admitByCost: true, maxRequestTokens: 500, deadlineMs: 60_000 });
  t.ok(await until(() => fake.calls.length === 1));
  const { deadlineMs, ...rest } = fake.calls[0]!.request;
  t.same(rest, { ...REQUEST, system: '', admitByCost: true, maxRequestTokens: 500 }, 'an empty system text is not taken for none');
  t.ok(deadlineMs! > 55_000 && deadlineMs! <= 60_000, `the deadline arrives as the time left (${deadlineMs} ms)`);
  fake.calls[0]!.settle(RESULT);
  await answer;
});

t.test('answers are matched to their calls, in whatever order they finish', async (t) => {
  const fake = fakeEngine();
  const { channel } = await served(t, fake.engine);
  const answers = [0, 1, 2].map((i) => channel.score({ ...REQUEST, prefix: `p${i}` }));
  t.ok(await until(() => fake.calls.length === 3));
  for (const i of [2, 0, 1]) fake.calls.find((c) => c.request.prefix === `p${i}`)!.settle({ ...RESULT, promptTokens: i });
  t.same(
    (await Promise.all(answers)).map((r) => r.promptTokens),
    [0, 1, 2],
  );
});

t.test('an engine error keeps its code, message and details', async (t) => {
  const fake = fakeEngine();
  const { channel } = await served(t, fake.engine);
  const answer = channel.score(REQUEST);
  t.ok(await until(() => fake.calls.length === 1));
  fake.calls[0]!.settle(new EngineError('context_exceeded', 'too long', { tokens: 9, limit: 4 }));
  await t.rejects(answer, { name: 'EngineError', code: 'context_exceeded', message: 'too long', details: { tokens: 9, limit: 4 } });
  const plain = channel.score(REQUEST);
  t.ok(await until(() => fake.calls.length === 2));
  fake.calls[1]!.settle(new Error('boom'));
  await t.rejects(plain, { name: 'EngineError', code: 'internal', message: 'boom' }, 'any other failure is internal, with its message');
});

t.test('a cancel reaches the engine and rejects at once; the channel serves on', async (t) => {
  const fake = fakeEngine();
  const { channel } = await served(t, fake.engine);
  const aborter = new AbortController();
  const answer = channel.score({ ...REQUEST, prefix: 'gone' }, aborter.signal);
  const other = channel.score({ ...REQUEST, prefix: 'stays' });
  t.ok(await until(() => fake.calls.length === 2));
  aborter.abort();
  await t.rejects(answer, { code: 'cancelled' });
  t.ok(await until(() => fake.aborted.length > 0), 'the engine saw the abort');
  t.same(fake.aborted, ['gone'], 'only that request was aborted');
  fake.calls.find((c) => c.request.prefix === 'stays')!.settle(RESULT);
  t.same(await other, RESULT);
  const early = new AbortController();
  early.abort();
  await t.rejects(channel.score(REQUEST, early.signal), { code: 'cancelled' }, 'an aborted signal is refused before sending');
});

t.test('the deadline ends the call and the engine drops the job', async (t) => {
  const fake = fakeEngine();
  const { channel } = await served(t, fake.engine);
  const started = Date.now();
  await t.rejects(channel.score({ ...REQUEST, prefix: 'slow', deadlineMs: 300 }), { name: 'EngineError', code: 'deadline_exceeded' });
  t.ok(Date.now() - started < 3000, `answered at the deadline (${Date.now() - started} ms)`);
  t.ok(await until(() => fake.aborted.includes('slow')), "the engine's job was aborted");
});

t.test("a caller's process that dies has its jobs aborted in the engine, and only its own", async (t) => {
  const fake = fakeEngine();
  const { server, channel } = await served(t, fake.engine);
  const kept = channel.score({ ...REQUEST, prefix: 'kept' });
  // Another process calls, then is killed with SIGKILL, as an HTTP worker under load would be.
  const client = path.join(packageRoot(), 'dist', 'src', 'engine', 'rpc', 'client.js');
  const script = `const { openEngineChannel } = await import(${JSON.stringify(client)});
    const channel = openEngineChannel(${JSON.stringify(server.address)});
    for (const prefix of ['doomed-a', 'doomed-b']) channel.score({ ...${JSON.stringify(REQUEST)}, prefix }).catch(() => {});
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
  t.ok(
    await until(() => fake.calls.filter((c) => c.request.prefix.startsWith('doomed')).length === 2, 15_000),
    'the other process has two calls in the engine',
  );
  child.kill('SIGKILL');
  t.ok(await until(() => fake.aborted.length === 2), 'both of its jobs were aborted');
  t.same(fake.aborted.sort(), ['doomed-a', 'doomed-b']);
  fake.calls.find((c) => c.request.prefix === 'kept')!.settle(RESULT);
  t.same(await kept, RESULT, "this process's call was not touched");
});

t.test('an engine that goes away fails what was waiting with unavailable, and what comes after', async (t) => {
  const fake = fakeEngine();
  const socket = await privateSocketPath();
  const server = await serveEngine(fake.engine, { path: socket }, () => {});
  const channel = openEngineChannel(socket);
  t.teardown(() => {
    channel.close();
    removeEngineSocket(socket);
  });
  const waiting = channel.score(REQUEST);
  t.ok(await until(() => fake.calls.length === 1));
  await server.close();
  await t.rejects(waiting, { name: 'EngineError', code: 'unavailable' });
  const started = Date.now();
  await t.rejects(channel.score(REQUEST), { code: 'unavailable' }, 'a later call is refused, not lost');
  t.ok(Date.now() - started < 5000, 'and at once');
});

t.test('counters and the health check cross; a wedged engine is NOT_SERVING', async (t) => {
  const healthy = await served(t, fakeEngine({ queueDepth: 3 }).engine);
  t.match(await healthy.channel.stats(1000), { queueDepth: 3, wedged: false });
  t.equal(await healthy.channel.serving(1000), true);
  const wedged = await served(t, fakeEngine({ queueDepth: 3, wedged: true }).engine);
  t.equal(await wedged.channel.serving(1000), false);
});

t.test('bytes that are not gRPC close only their own connection', async (t) => {
  const fake = fakeEngine();
  const { socket, channel } = await served(t, fake.engine);
  const raw = net.createConnection(socket);
  await new Promise((r) => raw.once('connect', r));
  const closed = new Promise((r) => raw.once('close', r));
  raw.end(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
  raw.on('data', () => {});
  await closed;
  const answer = channel.score(REQUEST);
  t.ok(await until(() => fake.calls.length === 1));
  fake.calls[0]!.settle(RESULT);
  t.same(await answer, RESULT, 'the engine serves on');
});
