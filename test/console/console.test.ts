import t from 'tap';
import { startHarness, TOKEN } from './helpers.js';
import { backendsFor } from '../helpers/backends.js';
import { createGate } from '../../src/api/gate.js';
import { utcDay } from '../../src/store/clock.js';
import { generateOpenApi } from '../../src/api/openapi.js';
import { consoleRoutes } from '../../src/console/routes.js';

for (const backend of await backendsFor(t)) {
  const harness = async (env: Record<string, string> = {}, consoleToken: string | null = TOKEN) =>
    startHarness(await backend.fresh(), env, consoleToken, backend.options);

  t.test(`${backend.name}: console auth: 503 when unconfigured, 401 on missing/wrong token or an API key, 422 on bad email`, async (t) => {
    const closed = await harness({}, null);
    t.teardown(() => closed.close());
    const r503 = await closed.call('GET', '/v1/console/api-keys', { headers: { 'x-arbitra-console-token': 'x', 'x-arbitra-user-email': 'a@b.io' } });
    t.equal(r503.status, 503);
    t.equal(r503.json.detail.error_type, 'service_unavailable');

    const h = await harness();
    t.teardown(() => h.close());
    const missing = await h.call('GET', '/v1/console/api-keys', { headers: { 'x-arbitra-user-email': 'a@b.io' } });
    t.equal(missing.status, 401);
    t.equal(missing.json.detail.error_type, 'authentication_error');
    t.match(missing.json.detail.message, /console token/i);
    const wrong = await h.call('GET', '/v1/console/api-keys', { headers: { 'x-arbitra-console-token': TOKEN + 'x', 'x-arbitra-user-email': 'a@b.io' } });
    t.equal(wrong.status, 401);
    const { secret } = await h.store.keys.create('a@b.io');
    const withKey = await h.call('GET', '/v1/console/api-keys', { headers: { authorization: `Bearer ${secret}`, 'x-arbitra-user-email': 'a@b.io' } });
    t.equal(withKey.status, 401, 'an API key never opens console routes');
    const badEmail = await h.call('GET', '/v1/console/account', { headers: { 'x-arbitra-console-token': TOKEN, 'x-arbitra-user-email': 'not-an-email' } });
    t.equal(badEmail.status, 422);
    t.same(badEmail.json.detail[0].loc, ['header', 'x-arbitra-user-email']);
    const noEmail = await h.call('GET', '/v1/console/account', { headers: { 'x-arbitra-console-token': TOKEN } });
    t.equal(noEmail.status, 422);
    const compat = await h.call('GET', '/v1/console/api-keys', { headers: { 'x-typesafe-console-token': TOKEN, 'x-typesafe-user-email': 'A@B.io' } });
    t.equal(compat.status, 200, 'the third-party header names work too');
    t.equal(compat.json.keys.length, 1, 'email normalised to lower case');
  });

  t.test(`${backend.name}: key lifecycle over HTTP: sync, create, list, account, usage, revoke`, async (t) => {
    const h = await harness({ ARBITRA_MONTHLY_CAP: '500', ARBITRA_RATE_LIMIT_RPS: '1000', ARBITRA_FREE_DAILY_DECISIONS: '3' });
    t.teardown(() => h.close());
    const me = h.console('Owner@Example.com');
    const s1 = await h.call('POST', '/v1/console/users/sync', { headers: me, body: { name: 'Owner', image: null } });
    t.equal(s1.status, 200);
    t.match(s1.json.user_id, /^usr_/);
    const s2 = await h.call('POST', '/v1/console/users/sync', { headers: me });
    t.equal(s2.json.user_id, s1.json.user_id, 'stable user_id; empty body allowed');
    t.equal(s2.json.name, 'Owner');
    t.equal((await h.call('POST', '/v1/console/users/sync', { headers: me, body: { name: 5 } })).status, 422);

    const created = await h.call('POST', '/v1/console/api-keys', { headers: me, body: {} });
    t.equal(created.status, 200);
    t.equal(created.json.name, 'Default');
    t.match(created.json.key, /^arb_[0-9A-Za-z]{43}$/);
    t.ok(created.json.key.startsWith(created.json.prefix));
    t.equal(created.headers.get('cache-control'), 'no-store');
    const second = await h.call('POST', '/v1/console/api-keys', { headers: me, body: { name: 'ci' } });
    t.equal(second.json.name, 'ci');
    t.equal((await h.call('POST', '/v1/console/api-keys', { headers: me, body: { name: '' } })).status, 422);

    // Three admitted decisions and one refused, as the decision route would do them.
    const key = (await h.store.keys.verify(created.json.key))!;
    const gate = createGate(h.store, h.limits);
    for (let i = 0; i < 3; i++) await (await gate.admit(key)).release();
    await t.rejects(gate.admit(key), { code: 'quota_exceeded' });

    const list = await h.call('GET', '/v1/console/api-keys', { headers: me });
    t.equal(list.status, 200);
    t.equal(list.json.keys.length, 2);
    const item = list.json.keys.find((k: { id: string }) => k.id === created.json.id);
    t.equal(item.month_requests, 3);
    t.ok(item.last_used_at);
    t.equal(item.revoked_at, null);
    t.notOk(JSON.stringify(list.json).includes(created.json.key), 'secret never listed');

    const account = await h.call('GET', '/v1/console/account', { headers: me });
    t.same(
      { plan: account.json.plan, month: account.json.month, total: account.json.total_requests, cap: account.json.monthly_cap, n: account.json.keys.length },
      { plan: 'Free', month: new Date().toISOString().slice(0, 7), total: 3, cap: 500, n: 2 },
    );

    const usage = await h.call('GET', '/v1/console/usage', { headers: me });
    t.same(usage.json.rows, [{ key_id: created.json.id, name: 'Default', prefix: created.json.prefix, day: utcDay(Date.now()), requests: 3, rate_limited: 1 }]);

    const other = h.console('intruder@example.com');
    const foreign = await h.call('DELETE', `/v1/console/api-keys/${created.json.id}`, { headers: other });
    t.equal(foreign.status, 404);
    t.equal(foreign.json.detail.error_type, 'not_found');
    t.equal((await h.call('DELETE', '/v1/console/api-keys/key_nope', { headers: me })).status, 404);
    t.equal((await h.call('GET', '/v1/console/api-keys', { headers: other })).json.keys.length, 0, 'users see only their keys');

    const revoked = await h.call('DELETE', `/v1/console/api-keys/${created.json.id}`, { headers: me });
    t.equal(revoked.status, 200);
    t.equal(revoked.json.id, created.json.id);
    t.equal(revoked.json.revoked, true);
    t.ok(Date.parse(revoked.json.revoked_at));
    t.equal(await h.store.keys.verify(created.json.key), null, 'revoked at once');
    const retention = await h.call('DELETE', '/v1/retention/whatever', { headers: { authorization: `Bearer ${created.json.key}` } });
    t.equal(retention.status, 401, 'the revoked key is refused by API routes');
  });

  t.test(`${backend.name}: default limits: the account reports monthly_cap 0, which the OpenAPI document says means no cap`, async (t) => {
    const h = await harness();
    t.teardown(() => h.close());
    const { record } = await h.store.keys.create('solo@x.io');
    const gate = createGate(h.store, h.limits);
    for (let i = 0; i < 3; i++) await (await gate.admit(record)).release();
    const account = await h.call('GET', '/v1/console/account', { headers: h.console('solo@x.io') });
    t.equal(account.status, 200);
    t.match(account.json, { monthly_cap: 0, total_requests: 3, keys: [{ id: record.id, month_requests: 3 }] });
    t.notOk('balance_eur' in account.json, 'no billing by default');

    const doc = generateOpenApi(consoleRoutes({ store: h.store, limits: h.limits, consoleToken: TOKEN, secretThrottle: h.secretThrottle })) as any;
    const summary = doc.paths['/v1/console/account'].get.responses['200'].content['application/json'].schema;
    t.ok(summary.required.includes('monthly_cap'), 'monthly_cap is required');
    t.equal(summary.properties.monthly_cap.type, 'integer');
    t.match(summary.properties.monthly_cap.description, /0 means no cap/);
  });

  t.test(`${backend.name}: verification tokens: issue, use once, wrong user, used, expired`, async (t) => {
    const h = await harness({ ARBITRA_VERIFICATION_TOKEN_TTL_SECONDS: '1' });
    t.teardown(() => h.close());
    const me = h.console('v@x.io');
    const issued = await h.call('POST', '/v1/console/verification-tokens', { headers: me, body: { purpose: 'email_verification' } });
    t.equal(issued.status, 200);
    t.match(issued.json.token, /^avt_/);
    t.equal(issued.json.email, 'v@x.io');
    t.ok(Date.parse(issued.json.expires_at) > Date.now());
    const other = await h.call('POST', '/v1/console/verification-tokens/use', { headers: h.console('w@x.io'), body: { token: issued.json.token } });
    t.equal(other.status, 404);
    const used = await h.call('POST', '/v1/console/verification-tokens/use', { headers: me, body: { token: issued.json.token } });
    t.equal(used.status, 200);
    t.same({ ok: used.json.ok, email: used.json.email, purpose: used.json.purpose }, { ok: true, email: 'v@x.io', purpose: 'email_verification' });
    const again = await h.call('POST', '/v1/console/verification-tokens/use', { headers: me, body: { token: issued.json.token } });
    t.equal(again.status, 409);
    t.equal(again.json.detail.error_type, 'conflict');
    t.equal((await h.call('POST', '/v1/console/verification-tokens/use', { headers: me, body: {} })).status, 422);
    const short = await h.call('POST', '/v1/console/verification-tokens', { headers: me });
    await new Promise((r) => setTimeout(r, 1100));
    const expired = await h.call('POST', '/v1/console/verification-tokens/use', { headers: me, body: { token: short.json.token } });
    t.equal(expired.status, 410);
    t.equal(expired.json.detail.error_type, 'gone');
  });
}
