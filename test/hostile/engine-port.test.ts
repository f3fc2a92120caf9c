// The engine port (`arbitra engine --listen`) against someone on its network without the secret,
// on real engine nodes and a real API node: an enormous unproven call is refused before it is read
// (the engine process's memory does not move), an API node's calls recorded on the network are
// refused by the engine's sibling of the same secret, and replies altered on the way are refused by
// the API node, which answers 503 rather than a decision it cannot trust.
import fs from 'node:fs';
import t from 'tap';
import { hugeCall, replay, tamperingProxy } from '../helpers/engine-port-attacks.js';
import { cannotRun, startEngineNode, startServer, until, type EngineNode, type Server } from '../integration/helpers/server.js';

const SECRET = { ARBITRA_ENGINE_SECRET: 'hostile-engine-port-secret-0123' };
const BODY = { state: 'The parcel arrived broken and I want my money back.', questions: { refund: { instructions: 'Does the customer want a refund?' } } };

/** The resident memory of a process, from /proc. */
function rss(pid: number): number {
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(kib![1]) * 1024;
}

/** Bytes a process has read through read(2) and its kind, sockets included. */
function bytesRead(pid: number): number {
  return Number(/^rchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
}

const target = (engine: EngineNode) => ({ host: '127.0.0.1', port: engine.port });

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const [a, b] = await Promise.all([startEngineNode(SECRET), startEngineNode(SECRET)]);
  t.teardown(() => Promise.all([a.stop(), b.stop()]));
  const dir = t.testdir();
  const apiNode = (address: string): Promise<Server> => startServer(dir, { workers: 1, env: { ...SECRET, ARBITRA_ENGINES: address } });

  t.test('an unproven call of 200 MB is refused before it is read: the engine process does not grow', async (t) => {
    const [before, readBefore] = [rss(a.pid), bytesRead(a.pid)];
    const call = await hugeCall(target(a), 200_000_000);
    const [grown, read] = [rss(a.pid) - before, bytesRead(a.pid) - readBefore];
    t.equal(call.status, 16, 'UNAUTHENTICATED');
    t.ok(read < 1 << 20, `the engine read ${read} bytes`);
    t.ok(grown < 64 << 20, `its memory grew by ${(grown / 2 ** 20).toFixed(1)} MiB`);
  });

  t.test("an API node's calls, recorded on the network, are refused by a sibling engine of the same secret", async (t) => {
    const recorder = await tamperingProxy(target(a));
    t.teardown(() => recorder.close());
    const server = await apiNode(recorder.address);
    t.teardown(() => server.stop());
    t.ok(await until(async () => (await server.call('/health')).status === 200), 'the API node serves through the recorder');
    const { secret } = await server.createKey('recorded@example.com');
    const reply = await server.call('/v1/systemone', { body: BODY, key: secret, fresh: true });
    t.equal(reply.status, 200, reply.text);
    t.ok(recorder.recorded.length >= 2, `${recorder.recorded.length} connections recorded (the primary's and the worker's)`);
    const replayed = await Promise.all(recorder.recorded.map((r) => replay(r, target(b))));
    t.same(
      replayed.map((r) => r.answered),
      recorder.recorded.map(() => false),
      'none of their calls answered by the sibling',
    );
    t.same(await replay(recorder.recorded.at(-1)!, target(a)), { answered: false }, 'nor by the engine that answered them');
  });

  t.test('replies altered on the way are refused: the API node answers 503, not an altered decision', async (t) => {
    // One byte of every reply changed, as an attacker would change a score.
    const flip = (payload: Buffer): Buffer => {
      const out = Buffer.from(payload);
      if (out.length > 8) out[out.length - 2]! ^= 0x01;
      return out;
    };
    const proxy = await tamperingProxy(target(a), { reply: flip });
    t.teardown(() => proxy.close());
    const server = await apiNode(proxy.address);
    t.teardown(() => server.stop());
    const why = /the engine could not prove its reply/;
    t.match(await server.logged(why, 30_000), why, 'the API node says why');
    t.equal((await server.call('/health')).status, 503, '/health 503');
    const { secret } = await server.createKey('altered@example.com');
    const reply = await server.call('/v1/systemone', { body: BODY, key: secret });
    t.equal(reply.status, 503, 'decisions 503');
  });
}
