import t from 'tap';
import { startHarness, TOKEN } from './helpers.js';
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

  t.test(`${backend.name}: traces: API key required, single or array, per-item rejections, bounds`, async (t) => {
    const h = await harness();
    t.teardown(() => h.close());
    const { record, secret } = await h.store.keys.create('tr@x.io');
    const auth = { authorization: `Bearer ${secret}` };
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
