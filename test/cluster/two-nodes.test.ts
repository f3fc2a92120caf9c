// Two API nodes on one PostgreSQL database and one remote engine, as deploy/ lays them out, all
// real processes on loopback: a key made on one works on the other and its revocation there is
// refused on the next request; a limit holds exactly across both; an idempotent request replays
// (and conflicts) from either; a retained request is deleted from the other node; a node killed
// with requests in flight loses no acknowledged write and its in-flight slots lapse; a node with
// another ARBITRA_KEY_SECRET is refused at start.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { postgresFor } from '../helpers/postgres.js';
import { CLI, cannotRun, CONSOLE_TOKEN, startEngineNode, startServer, type Server } from '../integration/helpers/server.js';

const ENGINE_SECRET = { ARBITRA_ENGINE_SECRET: 'two-nodes-engine-secret-0123' };
const KEY_SECRET = 'two-nodes-key-secret-0123456789abcdef';
const BODY = { state: 'The parcel arrived broken and I want my money back.', questions: { refund: { instructions: 'Does the customer want a refund?' } } };
const LIMIT = 20;

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const pg = await postgresFor(t);
  if (pg) {
    const url = await pg.freshDatabase();
    const engine = await startEngineNode(ENGINE_SECRET);
    t.teardown(() => engine.stop());
    const env = {
      ...ENGINE_SECRET,
      ARBITRA_KEY_SECRET: KEY_SECRET,
      ARBITRA_STORE_URL: url,
      ARBITRA_ENGINES: `127.0.0.1:${engine.port}`,
      ARBITRA_FREE_DAILY_DECISIONS: String(LIMIT),
      ARBITRA_RATE_LIMIT_RPS: '100000',
    };
    const dir = t.testdir();
    const node = (extra: Record<string, string> = {}) => startServer(dir, { workers: 2, env: { ...env, ...extra } });
    const nodes: Server[] = [await node(), await node()];
    t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
    const [a, b] = nodes as [Server, Server];

    const ready = async (n: Server) => {
      for (const end = Date.now() + 60_000; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
        if ((await n.call('/health')).status === 200) return true;
      }
      return false;
    };
    const newKey = async (n: Server, email: string): Promise<{ id: string; key: string }> => {
      const r = await n.call('/v1/console/api-keys', { body: { name: 'two-nodes' }, headers: n.console(email) });
      if (r.status !== 200) throw new Error(`key creation answered ${r.status}: ${r.text}`);
      return { id: r.json.id, key: r.json.key };
    };

    t.test('both nodes serve from the one database and the one engine', async (t) => {
      t.ok(await ready(a), 'node A ready');
      t.ok(await ready(b), 'node B ready');
      t.match(a.log(), /store: PostgreSQL at postgres:\/\/arbitra@127\.0\.0\.1:\d+\/test_/, 'the node says where its state is, without a password');
    });

    t.test('a key made on A works on B; revoked on A, B refuses it on the next request', async (t) => {
      const { id, key } = await newKey(a, 'shared@example.com');
      t.equal((await b.call('/v1/systemone', { body: BODY, key })).status, 200, 'B accepts the key A made');
      const revoked = await a.call(`/v1/console/api-keys/${id}`, { method: 'DELETE', headers: a.console('shared@example.com') });
      t.equal(revoked.status, 200);
      const after = await b.call('/v1/systemone', { body: BODY, key });
      t.equal(after.status, 401, 'B refuses it at once');
    });

    t.test('arbitra keys create --store makes a key every node accepts', async (t) => {
      const r = spawnSync(process.execPath, [CLI, 'keys', 'create', '--store', url, '--email', 'cli@example.com'], {
        env: { ...process.env, ARBITRA_KEY_SECRET: KEY_SECRET },
        encoding: 'utf8',
        timeout: 60_000,
      });
      t.equal(r.status, 0, r.stderr);
      const key = r.stdout.split('\n')[0]!.trim();
      t.equal((await a.call('/v1/systemone', { body: BODY, key })).status, 200, 'on A');
      t.equal((await b.call('/v1/systemone', { body: BODY, key })).status, 200, 'on B');
    });

    t.test(`a daily allowance of ${LIMIT} holds exactly across both nodes`, async (t) => {
      const { key } = await newKey(a, 'limits@example.com');
      const calls = Array.from({ length: 10 * LIMIT }, (_, i) =>
        (i % 2 ? a : b).call('/v1/systemone', { body: { ...BODY, state: `${BODY.state} #${i}` }, key, fresh: true }),
      );
      const statuses = (await Promise.all(calls)).map((r) => r.status);
      t.equal(statuses.filter((s) => s === 200).length, LIMIT, `exactly ${LIMIT} of ${statuses.length} answered`);
      t.equal(statuses.filter((s) => s === 429).length, 10 * LIMIT - LIMIT, 'every other one 429');
    });

    t.test('an idempotent request replays from the other node, and conflicts there', async (t) => {
      const { key } = await newKey(b, 'idem@example.com');
      const headers = { 'idempotency-key': 'order-7781' };
      const first = await a.call('/v1/systemone', { body: BODY, key, headers });
      t.equal(first.status, 200);
      const replay = await b.call('/v1/systemone', { body: BODY, key, headers });
      t.equal(replay.status, 200);
      t.equal(replay.json.id, first.json.id, 'B replays what A answered');
      const other = await b.call('/v1/systemone', { body: { ...BODY, state: 'Another state.' }, key, headers });
      t.equal(other.status, 409, 'another body under the same key is a conflict on B too');
    });

    t.test('a request retained on A is deleted from B', async (t) => {
      const { key } = await newKey(a, 'retain@example.com');
      const kept = await a.call('/v1/systemone', { body: { ...BODY, options: { retain: true } }, key });
      t.equal(kept.status, 200);
      const id = kept.json.id as string;
      t.equal((await b.call(`/v1/retention/${id}`, { method: 'DELETE', key })).status, 200, 'deleted through B');
      t.equal((await a.call(`/v1/retention/${id}`, { method: 'DELETE', key })).status, 404, 'gone for A too');
    });

    t.test('a node killed with requests in flight: acknowledged writes stay, its slots lapse', { timeout: 180_000 }, async (t) => {
      // Limits are each node's configuration: the victim and the node that checks after it share one.
      // A lease of 8 s (30 by default) keeps the wait for the lapse short; renewed every 2.7 s.
      const limits = { ARBITRA_MAX_IN_FLIGHT: '2', ARBITRA_SLOT_LEASE_SECONDS: '8' };
      const victim = await node(limits);
      const checker = await node(limits);
      nodes.push(victim, checker);
      t.ok((await ready(victim)) && (await ready(checker)));
      const { id, key } = await newKey(victim, 'killed@example.com');
      // Two slow requests hold both slots of the key on the victim when it dies: it is killed as soon as
      // the checker is refused for the key, not after a fixed wait, which a faster engine outran
      // (both requests answered before the kill).
      const slow = { ...BODY, questions: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`q${i}`, { instructions: `Is point ${i} about money?` }])) };
      const held = [victim.call('/v1/systemone', { body: slow, key }).catch(() => null), victim.call('/v1/systemone', { body: slow, key }).catch(() => null)];
      let taken = false;
      for (const end = Date.now() + 15_000; !taken && Date.now() < end; ) {
        await new Promise((r) => setTimeout(r, 100));
        taken = (await checker.call('/v1/systemone', { body: BODY, key })).status === 429;
      }
      t.ok(taken, 'both slots taken on the victim');
      await victim.kill9();
      const killedAt = Date.now();
      await Promise.all(held);
      const listed = await checker.call('/v1/console/api-keys', { headers: checker.console('killed@example.com') });
      t.ok(
        listed.json.keys.some((k: { id: string }) => k.id === id),
        'the key the dead node acknowledged is there for the others',
      );
      const limited = await checker.call('/v1/systemone', { body: BODY, key });
      t.equal(limited.status, 429, 'its two slots still count elsewhere while their leases run');
      let freed = false;
      for (const end = Date.now() + 60_000; !freed && Date.now() < end; await new Promise((r) => setTimeout(r, 1000))) {
        freed = (await checker.call('/v1/systemone', { body: BODY, key })).status === 200;
      }
      t.ok(freed, "the dead node's slots lapse and the key is admitted again");
      // With the default 30 s lease, renewed every 10 s, they could not lapse sooner than 20 s.
      const lapsedS = (Date.now() - killedAt) / 1000;
      t.ok(lapsedS < 19, `they lapse with the configured 8 s lease: admitted again ${lapsedS.toFixed(1)} s after the kill`);
    });

    t.test('a node with another ARBITRA_KEY_SECRET is refused at start, saying why', async (t) => {
      const r = spawnSync(process.execPath, [CLI, 'serve', '--store', url, '--port', '0', '--workers', '1', '--engines', `127.0.0.1:${engine.port}`], {
        env: { ...process.env, ...ENGINE_SECRET, ARBITRA_CONSOLE_TOKEN: CONSOLE_TOKEN, ARBITRA_KEY_SECRET: 'another-key-secret-0123456789abcdef' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      t.equal(r.status, 1);
      t.match(
        r.stderr,
        /^arbitra: cannot open the store PostgreSQL at postgres:\/\/arbitra@127\.0\.0\.1:\d+\/test_\S+: ARBITRA_KEY_SECRET differs from the secret the other nodes on this database use/m,
      );
    });
  }
}
