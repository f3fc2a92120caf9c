import t from 'tap';
import { startHarness, TOKEN, type Harness } from './helpers.js';
import { backendsFor } from '../helpers/backends.js';

for (const backend of await backendsFor(t)) {
  const harness = async (env: Record<string, string> = {}, consoleToken: string | null = TOKEN) =>
    startHarness(await backend.fresh(), env, consoleToken, backend.options);

  t.test(`${backend.name}: waitlist: validation, the first sign-up stands, honeypot, per-IP limit`, async (t) => {
    const h = await harness({ ARBITRA_IP_LIMIT_PER_MINUTE: '6' });
    t.teardown(() => h.close());
    const ok = await h.call('POST', '/v1/waitlist', { body: { email: 'Lead@Corp.eu', use_case: 'triage support tickets', consent: true } });
    t.equal(ok.status, 200);
    t.equal(ok.json.ok, true);
    t.type(ok.json.message, 'string');
    const again = await h.call('POST', '/v1/waitlist', { body: { email: 'lead@corp.eu', use_case: 'route invoices by type', company: 'Corp' } });
    t.same([again.status, again.json], [200, ok.json], 'a second sign-up is answered like the first, revealing nothing');
    t.equal(await h.store.waitlist.count(), 1, 'one entry per email');
    t.match(await h.store.waitlist.get('lead@corp.eu'), { company: null, use_case: 'triage support tickets', consent: true }, 'and it is the first');

    const bad = await h.call('POST', '/v1/waitlist', { body: { email: 'nope', use_case: 'short' } });
    t.equal(bad.status, 422);
    t.same(
      bad.json.detail.map((d: { loc: unknown[] }) => d.loc),
      [['body', 'use_case']],
      'schema errors first',
    );
    const badEmail = await h.call('POST', '/v1/waitlist', { body: { email: 'nope', use_case: 'long enough text' } });
    t.equal(badEmail.status, 422);
    t.same(badEmail.json.detail[0].loc, ['body', 'email']);

    const trap = await h.call('POST', '/v1/waitlist', { body: { email: 'bot@spam.io', use_case: 'buy my stuff now', website: 'http://spam' } });
    t.equal(trap.status, 200, 'honeypot answered as usual');
    t.same(trap.json, ok.json);
    t.equal(await h.store.waitlist.get('bot@spam.io'), null, 'honeypot stores nothing');

    const limited = await h.call('POST', '/v1/waitlist', { body: { email: 'x@y.io', use_case: 'seventh try here' } });
    t.equal(limited.status, 200, 'sixth request within the limit');
    const over = await h.call('POST', '/v1/waitlist', { body: { email: 'x@y.io', use_case: 'seventh try here' } });
    t.equal(over.status, 429);
    t.equal(over.json.detail.error_type, 'too_many_requests');
    t.ok(Number(over.headers.get('retry-after')) >= 1);
    t.ok(over.headers.get('retry-after-ms'));
  });

  /** Retained decisions of a key, as /v1/systemone with options.retain leaves them. */
  const retain = (h: Harness, keyId: string, ids: string[], untilMs = Date.now() + 86400e3) =>
    Promise.all(
      ids.map((id) =>
        h.store.retention.put({
          id,
          key_id: keyId,
          request: {},
          response: {},
          created_at: new Date().toISOString(),
          retention_until: new Date(untilMs).toISOString(),
        }),
      ),
    );

  t.test(`${backend.name}: traces: API key required, single or array, per-item rejections, bounds`, async (t) => {
    const h = await harness();
    t.teardown(() => h.close());
    const { record, secret } = await h.store.keys.create('tr@x.io');
    const auth = { authorization: `Bearer ${secret}` };
    await retain(h, record.id, ['r1', 'r2', 'r3', 'r4']);
    t.equal((await h.call('POST', '/v1/traces', { body: { request_id: 'r', outcome: 'A' } })).status, 401);
    const bad = await h.call('POST', '/v1/traces', { headers: { authorization: 'Bearer arb_wrong' }, body: {} });
    t.equal(bad.status, 401);
    t.match(bad.json.detail.message, /invalid api key/i);

    const one = await h.call('POST', '/v1/traces', { headers: auth, body: { request_id: 'r1', question: 'q', outcome: 'yes', metadata: { src: 'crm' } } });
    t.same(one.json, { accepted: 1, rejected: [] });
    const many = await h.call('POST', '/v1/traces', {
      headers: auth,
      body: [
        { request_id: 'r2', question: 'q', outcome: 2, observed_at: '2026-01-02T03:04:05Z' },
        { request_id: 'r3', outcome: true },
        { question: 'q', outcome: 'A' },
        { request_id: 'r4', outcome: 'A', observed_at: 'yesterday' },
        'nonsense',
      ],
    });
    t.equal(many.status, 200);
    t.equal(many.json.accepted, 2);
    t.same(
      many.json.rejected.map((r: { index: number }) => r.index),
      [2, 3, 4],
    );
    t.match(many.json.rejected[0].reason, /request_id/);
    t.match(many.json.rejected[1].reason, /observed_at/);
    const stored = await h.store.traces.list(record.id);
    t.equal(stored.length, 3);
    t.equal(stored.find((s) => s.request_id === 'r2')?.observed_at, '2026-01-02T03:04:05.000Z');
    t.same(stored.find((s) => s.request_id === 'r1')?.metadata, { src: 'crm' });

    const tooMany = await h.call('POST', '/v1/traces', { headers: auth, body: Array.from({ length: 1001 }, (_, i) => ({ request_id: `r${i}`, outcome: 1 })) });
    t.equal(tooMany.status, 422);
    t.equal(tooMany.json.detail[0].type, 'too_long');
    t.equal((await h.call('POST', '/v1/traces', { headers: auth, body: '{"request_id":' })).status, 422);
    t.equal((await h.call('POST', '/v1/traces', { headers: auth, body: 42 })).status, 422);
  });

  t.test(`${backend.name}: traces: only this key's retained decisions, each rejected alike`, async (t) => {
    const h = await harness();
    t.teardown(() => h.close());
    const a = await h.store.keys.create('a@x.io');
    const b = await h.store.keys.create('b@x.io');
    await retain(h, a.record.id, ['mine']);
    await retain(h, b.record.id, ['theirs']);
    await retain(h, a.record.id, ['lapsed'], Date.now() - 1000);
    const res = await h.call('POST', '/v1/traces', {
      headers: { authorization: `Bearer ${a.secret}` },
      body: [
        { request_id: 'theirs', outcome: 'A' },
        { request_id: 'mine', question: 'q', outcome: 'A' },
        { request_id: 'invented', outcome: 'A' },
        { request_id: 'lapsed', outcome: 'A' },
        { outcome: 'A' },
      ],
    });
    t.equal(res.status, 200);
    t.equal(res.json.accepted, 1);
    t.same(
      res.json.rejected.map((r: { index: number }) => r.index),
      [0, 2, 3, 4],
      'in index order, whatever check refused them',
    );
    const [theirs, invented, lapsed] = res.json.rejected.map((r: { reason: string }) => r.reason);
    t.match(theirs, /^request_id: not a decision of this API key that is still retained/);
    t.equal(invented, theirs, "another key's decision reads as no decision at all");
    t.equal(lapsed, theirs);
    const stored = await h.store.traces.list(a.record.id);
    t.same(
      stored.map((r) => [r.request_id, r.question]),
      [['mine', 'q']],
    );
    t.equal(stored[0]?.expires_at, (await h.store.retention.get(a.record.id, 'mine'))?.retention_until, 'a trace lasts as long as its decision');
    t.equal((await h.store.traces.list(b.record.id)).length, 0, 'nothing was stored under the other key');
  });

  t.test(`${backend.name}: traces: a key's quota, 429 past what is left and 413 past the whole`, async (t) => {
    const h = await harness({ ARBITRA_TRACES_MAX: '5', ARBITRA_TRACES_MAX_BYTES: '50000' });
    t.teardown(() => h.close());
    const a = await h.store.keys.create('qa@x.io');
    const b = await h.store.keys.create('qb@x.io');
    const ids = Array.from({ length: 7 }, (_, i) => `d${i}`);
    await retain(h, a.record.id, ids);
    await retain(h, b.record.id, ids);
    const send = (secret: string, body: unknown) => h.call('POST', '/v1/traces', { headers: { authorization: `Bearer ${secret}` }, body });
    const items = (from: number, to: number) => ids.slice(from, to).map((request_id) => ({ request_id, outcome: 'A' }));
    t.same((await send(a.secret, items(0, 3))).json, { accepted: 3, rejected: [] });
    const over = await send(a.secret, items(3, 6));
    t.equal(over.status, 429);
    t.match(over.json.detail, { error_type: 'quota_exceeded', limit_type: 'traces_per_key', max_traces: 5, max_bytes: 50000, stored_traces: 3 });
    t.equal((await h.store.traces.list(a.record.id)).length, 3, 'a refused request stores nothing');
    t.same((await send(a.secret, items(0, 5))).json, { accepted: 5, rejected: [] }, 'three re-sent and two new fit exactly');
    const whole = await send(b.secret, items(0, 6));
    t.equal(whole.status, 413, 'more than the whole quota in one request');
    t.match(whole.json.detail, { error_type: 'payload_too_large', request_traces: 6, max_traces: 5 });
    t.same((await send(b.secret, items(0, 5))).json, { accepted: 5, rejected: [] }, "one key's full quota costs another nothing");
    const big = await send(b.secret, { request_id: 'd0', outcome: 'A', metadata: { blob: 'x'.repeat(15000) } });
    t.equal(big.status, 200, 'replacing within the bytes');
    const bytes = await send(
      b.secret,
      ids.slice(0, 5).map((request_id) => ({ request_id, outcome: 'A', metadata: { blob: 'x'.repeat(15000) } })),
    );
    t.equal(bytes.status, 413, 'the bytes bound on their own');
  });

  t.test(`${backend.name}: retention delete: same key 200 once, other key 404, second delete 404`, async (t) => {
    const h = await harness();
    t.teardown(() => h.close());
    const a = await h.store.keys.create('a@x.io');
    const b = await h.store.keys.create('b@x.io');
    await h.store.retention.put({
      id: 'req_42',
      key_id: a.record.id,
      request: {},
      response: {},
      created_at: new Date().toISOString(),
      retention_until: new Date(Date.now() + 86400e3).toISOString(),
    });
    const other = await h.call('DELETE', '/v1/retention/req_42', { headers: { authorization: `Bearer ${b.secret}` } });
    t.equal(other.status, 404);
    t.equal(other.json.detail.error_type, 'not_found');
    t.equal((await h.call('DELETE', '/v1/retention/req_42')).status, 401);
    const mine = await h.call('DELETE', '/v1/retention/req_42', { headers: { authorization: `Bearer ${a.secret}` } });
    t.equal(mine.status, 200);
    t.same(mine.json, { id: 'req_42', deleted: true });
    t.equal((await h.call('DELETE', '/v1/retention/req_42', { headers: { authorization: `Bearer ${a.secret}` } })).status, 404);
  });
}
