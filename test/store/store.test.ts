// The store contract, run against every backend: LMDB always, PostgreSQL where it runs here.
import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openStore, traceBytes, type CalibrationRecord, type StoreOptions } from '../../src/store/index.js';
import { backendsFor } from '../helpers/backends.js';

for (const backend of await backendsFor(t)) {
  const { fresh } = backend;
  const open = (location: string, opts: StoreOptions = {}) => openStore(location, { ...backend.options, ...opts });

  t.test(backend.name, async (t) => {
    t.test('keys: create, verify by hash, list, revoke', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      const { record, secret } = await store.keys.create('Alice@Example.COM');
      t.match(secret, /^arb_[0-9A-Za-z]{43}$/);
      t.equal(record.name, 'Default');
      t.equal(record.email, 'alice@example.com');
      t.ok(secret.startsWith(record.prefix));
      t.notOk(record.masked.includes(secret.slice(8, -4)), 'masked form hides the middle');

      const verified = await store.keys.verify(secret);
      t.equal(verified?.id, record.id);
      t.equal(await store.keys.verify(secret.slice(0, -1) + (secret.endsWith('a') ? 'b' : 'a')), null);
      t.equal(await store.keys.verify('arb_short'), null);

      const listed = await store.keys.list('ALICE@example.com');
      t.equal(listed.length, 1);
      t.ok(listed[0]?.last_used_at, 'verify marks last_used_at');
      t.notOk(JSON.stringify(listed).includes(secret), 'the secret is never listed');

      t.equal(await store.keys.revoke(record.id, 'bob@example.com'), null, "another user's key is not found");
      const revoked = await store.keys.revoke(record.id, 'alice@example.com');
      t.ok(revoked?.revoked_at);
      t.equal(await store.keys.verify(secret), null, 'revoked key no longer verifies');
    });

    t.test('the secret is stored only as a hash', async (t) => {
      const location = await fresh();
      const store = await open(location);
      const { secret } = await store.keys.create('a@b.co');
      await store.close();
      if (backend.name === 'lmdb') {
        t.equal(statSync(join(location, 'server-secret')).mode & 0o777, 0o600, 'the server secret file is private');
        t.equal(readFileSync(join(location, 'arbitra.mdb')).indexOf(Buffer.from(secret.slice(4))), -1, 'the secret bytes are not in the database file');
      } else {
        const client = new pg.Client({ connectionString: location });
        await client.connect();
        t.teardown(() => client.end());
        const { rows } = await client.query<{ row: string }>('select row_to_json(k)::text as row from api_keys k');
        t.equal(rows.length, 1);
        t.notOk(rows[0]!.row.includes(secret.slice(4)), 'the secret is not in the key row');
      }
    });

    t.test('users: stable id, profile sync, same id after reopen', async (t) => {
      const location = await fresh();
      let store = await open(location);
      const u1 = await store.users.sync('X@Y.org', { name: 'X', image: null });
      const u2 = await store.users.sync('x@y.org', { name: 'Xavier' });
      t.equal(u1.id, u2.id);
      t.equal(u2.name, 'Xavier');
      await store.close();
      store = await open(location);
      t.equal((await store.users.getByEmail('x@y.org'))?.id, u1.id);
      t.equal((await store.users.get(u1.id))?.email, 'x@y.org');
      await store.close();
    });

    t.test('idempotency: hit, conflict, ttl, eviction of the oldest', async (t) => {
      const store = await open(await fresh(), { idempotencyMax: 3, idempotencyTtlSeconds: 1 });
      t.teardown(() => store.close());
      t.same(await store.idempotency.lookup('k1', 'a', 'h'), { status: 'miss' });
      await store.idempotency.save('k1', 'a', 'h', 200, Buffer.from('{"id":1}'));
      const hit = await store.idempotency.lookup('k1', 'a', 'h');
      t.equal(hit.status, 'hit');
      t.equal(hit.status === 'hit' && hit.response.toString(), '{"id":1}');
      t.same(await store.idempotency.lookup('k1', 'a', 'other'), { status: 'conflict' });
      t.same(await store.idempotency.lookup('k2', 'a', 'h'), { status: 'miss' }, 'scoped per key');
      for (const k of ['b', 'c', 'd']) await store.idempotency.save('k1', k, 'h', 200, Buffer.from(k));
      t.same(await store.idempotency.lookup('k1', 'a', 'h'), { status: 'miss' }, 'oldest evicted beyond max');
      t.equal((await store.idempotency.lookup('k1', 'd', 'h')).status, 'hit');
      await new Promise((r) => setTimeout(r, 1100));
      t.same(await store.idempotency.lookup('k1', 'd', 'h'), { status: 'miss' }, 'expired after the ttl');
    });

    t.test('retention: put, get, delete by the same key only, stable pseudonym', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      const rec = {
        id: 'req_1',
        key_id: 'key_a',
        request: { q: 1 },
        response: { a: 2 },
        created_at: new Date().toISOString(),
        retention_until: new Date(Date.now() + 86400e3).toISOString(),
      };
      await store.retention.put(rec);
      t.same(await store.retention.get('key_a', 'req_1'), rec);
      t.equal(await store.retention.get('key_b', 'req_1'), null);
      t.equal(await store.retention.delete('key_b', 'req_1'), false);
      t.equal(await store.retention.delete('key_a', 'req_1'), true);
      t.equal(await store.retention.delete('key_a', 'req_1'), false);
      t.equal(store.retention.pseudonym('key_a'), store.retention.pseudonym('key_a'));
      t.not(store.retention.pseudonym('key_a'), store.retention.pseudonym('key_b'));
      t.notOk(store.retention.pseudonym('key_a').includes('key_a'));
    });

    t.test('waitlist: the first sign-up of an email stands', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      const first = await store.waitlist.add({ email: 'W@x.io', company: null, use_case: 'first use case', consent: true });
      const second = await store.waitlist.add({ email: 'w@x.io', company: 'Acme', use_case: 'second use case', consent: false });
      t.same(second, first, 'a second sign-up answers with the entry kept');
      t.equal(await store.waitlist.count(), 1);
      t.match(await store.waitlist.get('w@x.io'), { email: 'w@x.io', company: null, use_case: 'first use case', consent: true, updated_at: first.updated_at });
    });

    const QUOTA = { traces: 100_000, bytes: 64 * 1024 * 1024 };
    const trace = (request_id: string, more: Record<string, unknown> = {}) => ({
      request_id,
      question: '',
      outcome: 'A' as string | number | boolean,
      observed_at: null,
      metadata: null,
      received_at: new Date().toISOString(),
      expires_at: new Date(Date.now() + 86400e3).toISOString(),
      ...more,
    });

    t.test('traces: keyed per request and question, the last of a repeat kept', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      await store.traces.putMany('k', [trace('r1', { question: 'q' }), trace('r1', { question: 'q', outcome: 'B' }), trace('r2', { outcome: true })], QUOTA);
      t.equal((await store.traces.list('k')).length, 2);
      t.equal((await store.traces.list('k', { requestId: 'r1' }))[0]?.outcome, 'B');
      t.equal((await store.traces.list('k', { requestId: 'r1' }))[0]?.key_id, 'k');
      t.equal((await store.traces.list('other')).length, 0);
    });

    t.test('traces: all() walks every trace of every key, in key order, past one page', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      // Past the PostgreSQL store's page of 1,000, over three keys.
      const records = Array.from({ length: 2100 }, (_, i) => ({ key_id: `k${i % 3}`, ...trace(`r${String(i).padStart(4, '0')}`, { outcome: i }) }));
      for (const keyId of ['k0', 'k1', 'k2']) {
        await store.traces.putMany(
          keyId,
          records.filter((r) => r.key_id === keyId),
          QUOTA,
        );
      }
      const seen: string[] = [];
      for await (const r of store.traces.all()) seen.push(`${r.key_id}/${r.request_id}`);
      t.equal(seen.length, 2100, 'every trace once');
      t.same(seen, records.map((r) => `${r.key_id}/${r.request_id}`).sort(), 'in key order');
    });

    t.test('traces: a key keeps at most its quota of traces and bytes, exactly, and other keys are not touched', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      const size = traceBytes({ ...trace('r000'), key_id: 'ka' });
      const quota = { traces: 10, bytes: 1_000_000 };
      t.same(
        await store.traces.putMany(
          'ka',
          [0, 1, 2, 3, 4, 5].map((i) => trace(`r00${i}`)),
          quota,
        ),
        { ok: true },
      );
      const over = await store.traces.putMany(
        'ka',
        [6, 7, 8, 9, 10].map((i) => trace(`r${String(i).padStart(3, '0')}`)),
        quota,
      );
      t.same(over, { ok: false, used: { traces: 6, bytes: 6 * size }, after: { traces: 11, bytes: 11 * size } }, 'refused whole, with what it holds');
      t.equal((await store.traces.list('ka')).length, 6, 'nothing of a refused call stored');
      t.same(
        await store.traces.putMany('ka', [trace('r000', { outcome: 'B' }), trace('r001', { outcome: 'C' })], { ...quota, traces: 6 }),
        { ok: true },
        'a replacement adds no trace',
      );
      t.same(await store.traces.putMany('kb', [trace('r000')], { traces: 1, bytes: size }), { ok: true }, "another key's quota is its own");
      // Concurrent calls of one key: exactly as many land as the quota holds.
      const racing = await Promise.all(Array.from({ length: 8 }, (_, i) => store.traces.putMany('kc', [trace(`c${i}a`), trace(`c${i}b`)], quota)));
      t.equal(racing.filter((r) => r.ok).length, 5, 'five pairs fit in ten');
      t.equal((await store.traces.list('kc')).length, 10);
      // Bytes bound on their own: metadata makes one trace large.
      const big = trace('big', { metadata: { blob: 'x'.repeat(5000) } });
      const byBytes = await store.traces.putMany('kd', [big, trace('small')], { traces: 10, bytes: 5000 });
      t.equal(byBytes.ok, false, 'over the bytes with few traces');
      t.equal((await store.traces.list('kd')).length, 0);
    });

    t.test('traces: the purge removes those past expires_at and frees their quota', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      const now = Date.now();
      const quota = { traces: 3, bytes: 1_000_000 };
      const soon = new Date(now + 1000).toISOString();
      await store.traces.putMany('k', [trace('old1', { expires_at: soon }), trace('old2', { expires_at: soon }), trace('live')], quota);
      t.equal((await store.traces.putMany('k', [trace('new1')], quota)).ok, false, 'full');
      t.equal((await store.purgeExpired(now)).traces, 0, 'nothing before its time');
      t.equal((await store.purgeExpired(now + 2000)).traces, 2);
      t.same(
        (await store.traces.list('k')).map((r) => r.request_id),
        ['live'],
      );
      t.same(await store.traces.putMany('k', [trace('new1'), trace('new2')], quota), { ok: true }, 'the quota counts what is left');
      t.equal((await store.traces.putMany('k', [trace('new3')], quota)).ok, false, 'and no more');
    });

    t.test("retention: retainedUntil names only this key's records", async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      const until = new Date(Date.now() + 86400e3).toISOString();
      const rec = (id: string, key_id: string) => ({ id, key_id, request: {}, response: {}, created_at: new Date().toISOString(), retention_until: until });
      await store.retention.put(rec('a1', 'ka'));
      await store.retention.put(rec('b1', 'kb'));
      t.same([...(await store.retention.retainedUntil('ka', ['a1', 'b1', 'none']))], [['a1', until]]);
      t.same([...(await store.retention.retainedUntil('kb', []))], []);
    });

    t.test('idempotency: a key evicts only its own oldest; all keys together evict the oldest past the total', async (t) => {
      const store = await open(await fresh(), { idempotencyMax: 3, idempotencyMaxTotal: 7 });
      t.teardown(() => store.close());
      const save = (key: string, idem: string) => store.idempotency.save(key, idem, 'h', 200, Buffer.from(idem));
      const has = async (key: string, idem: string) => (await store.idempotency.lookup(key, idem, 'h')).status === 'hit';
      await save('victim', 'v1');
      await save('victim', 'v2');
      for (let i = 0; i < 50; i++) await save('flood', `f${i}`);
      t.ok((await has('victim', 'v1')) && (await has('victim', 'v2')), "another key's flood evicts none of the victim's entries");
      t.same(await Promise.all(['f46', 'f47', 'f48', 'f49'].map((k) => has('flood', k))), [false, true, true, true], 'the flooding key keeps its newest 3');
      await save('victim', 'v2');
      t.ok(await has('victim', 'v2'), 'saving an entry again replaces it, not counted twice');
      await save('c', 'c1');
      await save('d', 'd1');
      t.ok(await has('victim', 'v1'), 'at the total (7), nothing of another key evicted yet');
      await save('e', 'e1');
      t.notOk(await has('victim', 'v1'), 'past the total, the oldest entry of all goes');
      t.ok((await has('flood', 'f47')) && (await has('e', 'e1')));
    });

    t.test('idempotency: the per-key cap is exact under concurrent saves', async (t) => {
      const store = await open(await fresh(), { idempotencyMax: 5 });
      t.teardown(() => store.close());
      await store.idempotency.save('other', 'o', 'h', 200, Buffer.from('o'));
      await Promise.all(Array.from({ length: 40 }, (_, i) => store.idempotency.save('k', `i${i}`, 'h', 200, Buffer.from(String(i)))));
      const hits = await Promise.all(Array.from({ length: 40 }, (_, i) => store.idempotency.lookup('k', `i${i}`, 'h')));
      t.equal(hits.filter((h) => h.status === 'hit').length, 5);
      t.equal((await store.idempotency.lookup('other', 'o', 'h')).status, 'hit');
    });

    t.test('calibrations: versions count up per model and layout; the newest is served', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      type Fit = CalibrationRecord & { fit: number };
      const sha = 'ab'.repeat(32);
      t.equal(await store.calibrations.latest(sha, 'L1'), null);
      const added = await Promise.all([1, 2, 3].map((i) => store.calibrations.add<Fit>({ model_sha256: sha, layout: 'L1', fit: i })));
      t.same(added.map((r) => r.version).sort(), ['L1.abababab.1', 'L1.abababab.2', 'L1.abababab.3'], 'concurrent fits get distinct versions');
      const other = await store.calibrations.add<Fit>({ model_sha256: sha, layout: 'L2', fit: 9 });
      t.equal(other.version, 'L2.abababab.1', 'counted per layout');
      const latest = await store.calibrations.latest<Fit>(sha, 'L1');
      t.equal(latest?.version, 'L1.abababab.3');
      t.equal(latest?.fit, added.find((r) => r.version === 'L1.abababab.3')?.fit, 'with the record as it was added');
    });

    t.test('verification tokens: single use, owner only, expiry', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      const user = await store.users.sync('v@x.io');
      const { token, record } = await store.verificationTokens.issue(user, 'email', 3600);
      t.match(token, /^avt_/);
      t.ok(Date.parse(record.expires_at) > Date.now());
      t.same(await store.verificationTokens.use(token, 'other@x.io'), { status: 'not_found' });
      t.equal((await store.verificationTokens.use(token, 'V@x.io')).status, 'ok');
      t.same(await store.verificationTokens.use(token, 'v@x.io'), { status: 'used' });
      t.same(await store.verificationTokens.use('avt_nope', 'v@x.io'), { status: 'not_found' });
      const short = await store.verificationTokens.issue(user, 'email', 1);
      await new Promise((r) => setTimeout(r, 1100));
      t.same(await store.verificationTokens.use(short.token, 'v@x.io'), { status: 'expired' });
    });

    t.test('purgeExpired removes only expired records', async (t) => {
      const store = await open(await fresh(), { idempotencyTtlSeconds: 60 });
      t.teardown(() => store.close());
      const now = Date.now();
      const mk = (id: string, until: number) => ({
        id,
        key_id: 'k',
        request: null,
        response: null,
        created_at: new Date(now).toISOString(),
        retention_until: new Date(until).toISOString(),
      });
      await store.retention.put(mk('old', now - 1000));
      await store.retention.put(mk('live', now + 86400e3));
      await store.idempotency.save('k', 'i', 'h', 200, Buffer.from('x'));
      const user = await store.users.sync('p@x.io');
      await store.verificationTokens.issue(user, 'email', 1);
      const live = await store.verificationTokens.issue(user, 'email', 3600);
      const result = await store.purgeExpired(now + 2000);
      t.same(result, { retained: 1, idempotency: 0, verificationTokens: 1, traces: 0, addressWindows: 0 });
      t.equal(await store.retention.get('k', 'old'), null);
      t.ok(await store.retention.get('k', 'live'));
      t.equal((await store.idempotency.lookup('k', 'i', 'h')).status, 'hit');
      t.same((await store.purgeExpired(now + 61_000)).idempotency, 1);
      t.equal((await store.verificationTokens.use(live.token, 'p@x.io')).status, 'ok');
    });

    t.test('per-address windows outlive their minute only until the next purge, and a live one still counts', async (t) => {
      const store = await open(await fresh());
      t.teardown(() => store.close());
      const minute = Math.floor(Date.now() / 60000) * 60000;
      for (let i = 0; i < 600; i++) await store.counters.hitIp(`2001:db8:${i.toString(16)}::/64`, 5, minute + 1000);
      t.equal(await store.counters.hitIp('203.0.113.9', 1, minute + 61_000), 0, 'opened in the next minute');
      t.equal((await store.purgeExpired(minute + 61_000)).addressWindows, 600, 'every ended window, past one batch');
      t.ok((await store.counters.hitIp('203.0.113.9', 1, minute + 62_000)) > 0, 'the live window was kept and still refuses');
      t.equal((await store.purgeExpired(minute + 62_000)).addressWindows, 0, 'nothing left to remove');
    });
  });
}
