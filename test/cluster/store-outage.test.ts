// A node on a real PostgreSQL whose database goes away while it serves, all real processes: while
// the server is down, and while it hangs (SIGSTOP), the decision, console, retention and waitlist
// routes answer 503 service_unavailable with Retry-After within a bounded time (never a 500, never a
// hang) and /health says the store is unreachable; once the server is back the same node, never
// restarted, serves again, and everything it acknowledged before the outage is still there.
import t, { type Test } from 'tap';
import { HEALTH_WAIT_MS } from '../../src/api/routes/health.js';
import { CONNECT_TIMEOUT_MS, POOL_WAIT_MS, QUERY_TIMEOUT_MS } from '../../src/store/postgres/db.js';
import { postgresFor } from '../helpers/postgres.js';
import { cannotRun, startServer, until, type Reply, type Server } from '../integration/helpers/server.js';

const KEY_SECRET = 'store-outage-key-secret-0123456789abcdef';
const BODY = { state: 'The parcel arrived broken and I want my money back.', questions: { refund: { instructions: 'Does the customer want a refund?' } } };
const EMAIL = 'outage@example.com';

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const pg = await postgresFor(t);
  if (pg) {
    const url = await pg.freshDatabase();
    const node: Server = await startServer(t.testdir(), {
      workers: 2,
      env: { ARBITRA_KEY_SECRET: KEY_SECRET, ARBITRA_STORE_URL: url, ARBITRA_RATE_LIMIT_RPS: '100000' },
    });
    t.teardown(() => node.stop());

    /** The call, and how long it took. */
    const timed = async (call: Promise<Reply>): Promise<Reply & { ms: number }> => {
      const start = Date.now();
      const reply = await call;
      return { ...reply, ms: Date.now() - start };
    };

    let key = '';
    let keyId = '';
    let retainedId = '';
    let idempotentId = '';

    // Every route that needs the store, as a client would call it during the outage.
    const storeRoutes = (): [string, Promise<Reply>][] => [
      ['POST /v1/systemone', node.call('/v1/systemone', { body: BODY, key, fresh: true })],
      ['POST /v1/systemone (idempotent)', node.call('/v1/systemone', { body: BODY, key, headers: { 'idempotency-key': 'during-outage' }, fresh: true })],
      ['GET /v1/console/api-keys', node.call('/v1/console/api-keys', { headers: node.console(EMAIL), fresh: true })],
      ['POST /v1/console/api-keys', node.call('/v1/console/api-keys', { body: { name: 'during' }, headers: node.console(EMAIL), fresh: true })],
      ['GET /v1/console/usage', node.call('/v1/console/usage', { headers: node.console(EMAIL), fresh: true })],
      ['DELETE /v1/retention/{id}', node.call(`/v1/retention/${retainedId}`, { method: 'DELETE', key, fresh: true })],
      [
        'POST /v1/waitlist',
        node.call('/v1/waitlist', { body: { email: 'w@example.com', use_case: 'Deciding refunds at scale.', consent: true }, fresh: true }),
      ],
    ];

    const checkUnavailable = async (t: Test, boundMs: number) => {
      const replies = await Promise.all(storeRoutes().map(async ([name, call]) => [name, await timed(call)] as const));
      for (const [name, r] of replies) {
        t.equal(r.status, 503, `${name}: 503 (${r.text.slice(0, 120)})`);
        t.equal(r.json?.detail?.error_type, 'service_unavailable', `${name}: service_unavailable`);
        t.ok(Number(r.headers.get('retry-after')) > 0, `${name}: Retry-After ${r.headers.get('retry-after')}`);
        t.ok(Number(r.headers.get('retry-after-ms')) > 0, `${name}: retry-after-ms`);
        t.ok(r.ms < boundMs, `${name}: answered in ${r.ms} ms, under ${boundMs} ms`);
      }
      // Each worker reuses its last ping for a second (PING_REUSE_MS), so one that pinged just before
      // the outage may answer 200 once more; past that second every worker asks the database again.
      await new Promise((r) => setTimeout(r, 1_500));
      const health = await timed(node.call('/health', { fresh: true }));
      t.equal(health.status, 503, '/health is 503 within a second or two: the node cannot serve decisions');
      t.equal(health.json?.store?.status, 'unreachable', '/health says the store is unreachable');
      t.equal(health.json?.model?.loaded, true, '... while the model is loaded');
      // Its own wait for the store, with room for a loaded machine, and well short of the store's bounds.
      const healthBound = HEALTH_WAIT_MS + 2500;
      t.ok(health.ms < healthBound, `/health answered in ${health.ms} ms, under ${healthBound} ms`);
    };

    const checkServesAgain = async (t: Test) => {
      const healthy = async () => {
        const h = await node.call('/health', { fresh: true });
        return h.status === 200 && h.json?.store?.status === 'ok';
      };
      t.ok(await until(healthy, 30_000), '/health is 200 again by itself, with the store ok');
      t.equal((await node.call('/v1/systemone', { body: BODY, key })).status, 200, 'decisions are served again');
      const replay = await node.call('/v1/systemone', { body: BODY, key, headers: { 'idempotency-key': 'before-outage' } });
      t.equal(replay.json?.id, idempotentId, 'the idempotent answer acknowledged before the outage replays');
      t.equal(replay.headers.get('idempotent-replayed'), 'true');
      const keys = await node.call('/v1/console/api-keys', { headers: node.console(EMAIL) });
      t.equal(keys.status, 200);
      t.ok(
        keys.json.keys.some((k: { id: string }) => k.id === keyId),
        'the key made before the outage is there',
      );
      t.notOk(
        keys.json.keys.some((k: { name: string }) => k.name === 'during'),
        'no key was made by a request answered 503',
      );
    };

    t.test('before: the node serves from PostgreSQL and acknowledges writes', async (t) => {
      t.ok(await until(async () => (await node.call('/health')).status === 200, 120_000), 'ready');
      t.equal((await node.call('/health')).json?.store?.status, 'ok', '/health: store ok');
      const made = await node.call('/v1/console/api-keys', { body: { name: 'before' }, headers: node.console(EMAIL) });
      t.equal(made.status, 200);
      key = made.json.key;
      keyId = made.json.id;
      const first = await node.call('/v1/systemone', { body: BODY, key, headers: { 'idempotency-key': 'before-outage' } });
      t.equal(first.status, 200);
      idempotentId = first.json.id;
      const kept = await node.call('/v1/systemone', { body: { ...BODY, options: { retain: true } }, key });
      t.equal(kept.status, 200);
      retainedId = kept.json.id;
    });

    t.test('the database server stopped: 503 with Retry-After at once, never 500; back up, the node serves again', { timeout: 120_000 }, async (t) => {
      await pg.down();
      await checkUnavailable(t, 3000);
      await pg.up();
      await checkServesAgain(t);
    });

    t.test('the database server hung: 503 with Retry-After within the store bounds; resumed, the node serves again', { timeout: 120_000 }, async (t) => {
      pg.freeze();
      t.teardown(() => pg.thaw());
      // One request alone is given up on within one connect or answer bound (src/store/postgres/db.ts).
      const alone = await timed(node.call('/v1/systemone', { body: BODY, key, fresh: true }));
      // With room for a loaded machine, and well short of POOL_WAIT_MS, the next bound a request meets.
      const one = Math.max(CONNECT_TIMEOUT_MS, QUERY_TIMEOUT_MS) + 5000;
      t.equal(alone.status, 503);
      t.ok(alone.ms < one, `a request alone: 503 in ${alone.ms} ms, under ${one} ms`);
      // Several at once: those queued behind others for a pooled connection wait at most POOL_WAIT_MS.
      await checkUnavailable(t, POOL_WAIT_MS + 3000);
      pg.thaw();
      await checkServesAgain(t);
    });

    t.test('after: the retained request is still there, and the node was never restarted', async (t) => {
      t.equal(
        (await node.call(`/v1/retention/${retainedId}`, { method: 'DELETE', key })).status,
        200,
        'the retained request acknowledged before the outages is deleted now',
      );
      t.notMatch(node.log(), /HTTP worker \d+ exited/, 'no HTTP worker crashed');
      t.notMatch(node.log(), /internal error/, 'no request was answered 500');
      t.match(node.log(), /store unavailable \(answering 503\)/, 'the operator is told why requests were refused');
    });
  }
}
