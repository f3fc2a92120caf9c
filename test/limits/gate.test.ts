import t from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../src/store/index.js';
import { createGate, createIpLimiter } from '../../src/api/gate.js';
import { loadLimitsConfig, type LimitsConfig } from '../../src/limits/config.js';
import { ApiError } from '../../src/api/errors.js';
import { utcDay } from '../../src/store/clock.js';
import { DEFAULT_LEASE_MS as LEASE_MS } from '../../src/store/postgres/counters.js';
import { backendsFor } from '../helpers/backends.js';

const CHILD = fileURLToPath(new URL('./fixtures/admit-child.ts', import.meta.url));

function config(over: Record<string, string>): LimitsConfig {
  return loadLimitsConfig({
    ARBITRA_RATE_LIMIT_RPS: '100000',
    ARBITRA_MAX_IN_FLIGHT: '100000',
    ARBITRA_FREE_DAILY_DECISIONS: '100000',
    ARBITRA_MONTHLY_CAP: '100000',
    ...over,
  });
}

function runChild(env: Record<string, string>, args: string[]): { done: Promise<string>; kill: () => void; firstLine: Promise<string> } {
  const child = spawn(process.execPath, [...process.execArgv, CHILD, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let resolveFirst: (l: string) => void;
  const firstLine = new Promise<string>((r) => (resolveFirst = r));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('\n')) resolveFirst(out.split('\n')[0]!);
  });
  const done = new Promise<string>((resolve, reject) => {
    child.on('exit', (code, signal) => (code === 0 || signal ? resolve(out) : reject(new Error(`child exit ${code}`))));
  });
  return { done, firstLine, kill: () => child.kill('SIGKILL') };
}

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (err) {
    return err instanceof ApiError ? err.code : String(err);
  }
}

for (const backend of await backendsFor(t)) {
  // The children open the store as the test does; a PostgreSQL one needs the shared secret.
  const secretEnv = { ARBITRA_KEY_SECRET: backend.options.keySecret ?? '' };

  t.test(`${backend.name}: 1,000 parallel admits against a daily limit of 100 let exactly 100 through (one process)`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    const { record } = await store.keys.create('one@x.io');
    const gate = createGate(store, config({ ARBITRA_FREE_DAILY_DECISIONS: '100' }));
    const toMidnight = (ms: number): number => {
      const d = new Date(ms);
      return (Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) - ms) / 1000;
    };
    const started = Date.now();
    const results = await Promise.allSettled(Array.from({ length: 1000 }, () => gate.admit(record)));
    const ended = Date.now();
    t.equal(results.filter((r) => r.status === 'fulfilled').length, 100);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    const err = rejected.reason as ApiError;
    t.equal(err.code, 'quota_exceeded');
    t.equal(err.status, 429);
    // Bounded by the clock before and after the admits, which take seconds on a loaded machine.
    const retryAfter = err.retryAfterSeconds ?? 0;
    t.ok(retryAfter >= toMidnight(ended) - 1 && retryAfter <= toMidnight(started) + 1, `Retry-After ${retryAfter} s is the seconds to midnight UTC`);
    const rows = await store.counters.usageRows([record.id]);
    t.same(rows, [{ key_id: record.id, day: utcDay(Date.now()), requests: 100, rate_limited: 900 }]);
  });

  t.test(`${backend.name}: exact across several processes sharing the store`, async (t) => {
    const dir = await backend.fresh();
    const store = await openStore(dir, backend.options);
    t.teardown(() => store.close());
    const { record } = await store.keys.create('multi@x.io');
    const env = { ARBITRA_FREE_DAILY_DECISIONS: '100', ARBITRA_RATE_LIMIT_RPS: '100000', ARBITRA_MAX_IN_FLIGHT: '100000' };
    const children = Array.from({ length: 4 }, () => runChild({ ...env, ...secretEnv }, [dir, JSON.stringify(record), '250']));
    const outputs = await Promise.all(children.map((c) => c.done));
    const parsed = outputs.map((o) => JSON.parse(o.trim()) as { ok: number; codes: string[] });
    t.equal(
      parsed.reduce((n, p) => n + p.ok, 0),
      100,
      'exactly 100 of 1,000 admitted',
    );
    t.same(new Set(parsed.flatMap((p) => p.codes)), new Set(['quota_exceeded']));
    t.equal(await store.counters.userMonthRequests(record.user_id, utcDay(Date.now()).slice(0, 7)), 100);
  });

  t.test(`${backend.name}: per-second limit answers rate_limited with Retry-After`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    const { record } = await store.keys.create('rps@x.io');
    const limits = config({ ARBITRA_RATE_LIMIT_RPS: '3' });
    // Exact window arithmetic at a fixed clock, so a slow machine cannot cross a second boundary.
    const t0 = 1_800_000_000_000;
    for (let i = 0; i < 3; i++) {
      const r = await store.counters.admit(record, limits, t0 + i);
      t.ok(r.ok);
      if (r.ok) await store.counters.release(record.id, r.slotId);
    }
    t.same(await store.counters.admit(record, limits, t0 + 999), { ok: false, reason: 'per_second', retryAfterSeconds: 1 });
    t.equal((await store.counters.admit(record, limits, t0 + 1000)).ok, true, 'admitted again in the next second');

    // Through the gate: a burst of 20 gets at most two windows' worth through, the rest 429 with Retry-After.
    const gate = createGate(store, limits);
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => gate.admit(record)));
    const admitted = results.filter((r) => r.status === 'fulfilled').length;
    t.ok(admitted >= 1 && admitted <= 6, `admitted ${admitted}`);
    const err = (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason as ApiError;
    t.equal(err.code, 'rate_limited');
    t.equal(err.status, 429);
    t.equal(err.retryAfterSeconds, 1);
  });

  t.test(`${backend.name}: in-flight limit; release frees the slot; a dead process does not keep its slot`, async (t) => {
    const dir = await backend.fresh();
    const store = await openStore(dir, backend.options);
    t.teardown(() => store.close());
    const { record } = await store.keys.create('fly@x.io');
    const gate = createGate(store, config({ ARBITRA_MAX_IN_FLIGHT: '1' }));
    const a = await gate.admit(record);
    t.equal(await codeOf(gate.admit(record)), 'rate_limited');
    await a.release();
    await a.release(); // a second release must not free someone else's slot
    const b = await gate.admit(record);
    await b.release();

    const holder = runChild({ HOLD: '1', ARBITRA_MAX_IN_FLIGHT: '1', ...secretEnv }, [dir, JSON.stringify(record), '1']);
    t.equal(await holder.firstLine, 'held');
    t.equal(await codeOf(gate.admit(record)), 'rate_limited', 'the live child holds the only slot');
    holder.kill();
    await holder.done;
    if (backend.name === 'lmdb') {
      const c = await gate.admit(record);
      t.pass('slot of the killed process was reclaimed');
      await c.release();
    } else {
      t.equal(await codeOf(gate.admit(record)), 'rate_limited', 'a node that died holds its slot until its lease lapses');
      const c = await store.counters.admit(record, config({ ARBITRA_MAX_IN_FLIGHT: '1' }), Date.now() + LEASE_MS + 1);
      t.ok(c.ok, 'and no longer');
      if (c.ok) await store.counters.release(record.id, c.slotId);
    }
    t.equal(await store.counters.inFlight(record.id), 0);
  });

  t.test(`${backend.name}: monthly cap is enforced with quota_exceeded naming the cap`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    const { record } = await store.keys.create('cap@x.io');
    const gate = createGate(store, config({ ARBITRA_MONTHLY_CAP: '2' }));
    await (await gate.admit(record)).release();
    await (await gate.admit(record)).release();
    const err = (await gate.admit(record).catch((e: unknown) => e)) as ApiError;
    t.equal(err.code, 'quota_exceeded');
    t.match(err.message, /monthly cap of 2/);
    t.equal(err.context.limit_type, 'monthly_cap');
    t.ok((err.retryAfterSeconds ?? 0) > 0);
  });

  t.test(`${backend.name}: the self-hosted defaults cap no one: 1,001 decisions in a day pass and are all counted`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    const { record } = await store.keys.create('self@x.io');
    const limits = loadLimitsConfig({});
    // Noon UTC, 10 ms apart: one day, 100 a second, under the default per-second limit.
    const noon = Date.UTC(2026, 0, 15, 12);
    let refused: unknown = null;
    for (let i = 0; i < 1001 && refused === null; i++) {
      const r = await store.counters.admit(record, limits, noon + i * 10);
      if (r.ok) await store.counters.release(record.id, r.slotId);
      else refused = r;
    }
    t.equal(refused, null, 'no call refused, past the hosted allowance of 1000');
    t.equal(await store.counters.userMonthRequests(record.user_id, '2026-01'), 1001, 'the month counts every call');
    t.same(await store.counters.usageRows([record.id]), [{ key_id: record.id, day: '2026-01-15', requests: 1001, rate_limited: 0 }]);
  });

  t.test(`${backend.name}: 0 turns the daily allowance and the monthly cap off, even over the hosted preset`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    const { record } = await store.keys.create('zero@x.io');
    const gate = createGate(store, loadLimitsConfig({ ARBITRA_FREE_DAILY_DECISIONS: '0', ARBITRA_MONTHLY_CAP: '0' }, 'hosted'));
    for (let i = 0; i < 3; i++) t.equal(await codeOf(gate.admit(record).then((a) => a.release())), null, `call ${i + 1} admitted`);
    t.equal(await store.counters.userMonthRequests(record.user_id, utcDay(Date.now()).slice(0, 7)), 3);
  });

  t.test(`${backend.name}: billing: 402 with topup/payg urls when the balance cannot cover; meter charges`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    const { record } = await store.keys.create('pay@x.io');
    const limits = config({
      ARBITRA_BILLING: 'on',
      ARBITRA_PRICE_EUR_PER_1K_INPUT_TOKENS: '0.0005',
      ARBITRA_TOPUP_URL: 'https://example.eu/topup',
      ARBITRA_PAYG_URL: 'https://example.eu/payg',
    });
    const gate = createGate(store, limits);
    const err = (await gate.admit(record).catch((e: unknown) => e)) as ApiError;
    t.equal(err.code, 'payment_required');
    t.equal(err.status, 402);
    t.same(
      { topup_url: err.context.topup_url, payg_url: err.context.payg_url },
      {
        topup_url: 'https://example.eu/topup',
        payg_url: 'https://example.eu/payg',
      },
    );
    await store.counters.credit(record.user_id, 1_000, 0); // 0.001 EUR
    const adm = await gate.admit(record);
    t.same(await gate.meter(record, { inputTokens: 1234, outputTokens: 2 }), { cost_eur: '0.000617', cost_currency: 'EUR' });
    await adm.release();
    t.equal(await store.counters.balanceMicro(record.user_id, 0), 383);
    await (await gate.admit(record)).release();
    await gate.meter(record, { inputTokens: 1000, outputTokens: 1 });
    t.equal(await codeOf(gate.admit(record)), 'payment_required', 'a negative balance blocks the next call');
    t.equal(await createGate(store, config({})).meter(record, { inputTokens: 10, outputTokens: 1 }), null, 'no charge with billing off');
  });

  t.test(`${backend.name}: IP limiter answers too_many_requests with Retry-After`, async (t) => {
    const store = await openStore(await backend.fresh(), backend.options);
    t.teardown(() => store.close());
    const ip = createIpLimiter(store, config({ ARBITRA_IP_LIMIT_PER_MINUTE: '2' }));
    await ip.check('10.0.0.1');
    await ip.check('10.0.0.1');
    await ip.check('10.0.0.2');
    const err = await ip.check('10.0.0.1').catch((e: unknown) => e);
    t.equal((err as ApiError).code, 'too_many_requests');
    const ra = (err as ApiError).retryAfterSeconds ?? 0;
    t.ok(ra >= 1 && ra <= 60);
    // One IPv6 subscriber holds a whole /64: a fresh address from it is the same client.
    await ip.check('2001:db8:1:2::1');
    await ip.check('2001:db8:1:2::2');
    t.equal(await codeOf(ip.check('2001:db8:1:2:ffff::3')), 'too_many_requests', 'counted by the /64');
    t.equal(await codeOf(ip.check('2001:db8:1:3::1')), null, 'the next /64 is another client');
  });
}
