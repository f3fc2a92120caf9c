// The guessing throttle over a real LMDB store: what a guesser learns, and what it costs us.
import t, { type Test } from 'tap';
import { authenticate, consoleIdentity } from '../../src/api/auth.js';
import { ApiError } from '../../src/api/errors.js';
import { createSecretThrottle } from '../../src/api/secret-throttle.js';
import { loadLimitsConfig } from '../../src/limits/config.js';
import { openStore } from '../../src/store/index.js';
import type { KeyStore } from '../../src/store/types.js';
import { fakeRequest } from '../console/helpers.js';

const LIMIT = 5;

async function setUp(t: Test) {
  const store = await openStore(t.testdir());
  t.teardown(() => store.close());
  const throttle = createSecretThrottle(store, loadLimitsConfig({ ARBITRA_SECRET_FAILURE_LIMIT: String(LIMIT), ARBITRA_SECRET_FAILURE_WINDOW_SECONDS: '300' }));
  const { secret } = await store.keys.create('owner@example.eu');
  // The real key store, with its look-ups counted: a refused address must not reach it.
  let verified = 0;
  const keys: KeyStore = { ...store.keys, verify: (s) => (verified++, store.keys.verify(s)) };
  return { store, throttle, secret, keys, verified: () => verified };
}

const answer = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => '200',
    (err: unknown) => (err instanceof ApiError ? `${err.status} ${err.code}` : String(err)),
  );

const bearer = (key: string, ip: string) => fakeRequest({ authorization: `Bearer ${key}` }, { ip });

t.test('wrong API keys from one address: 401 up to the limit, then 429 before the key is looked up', async (t) => {
  const { throttle, secret, keys, verified } = await setUp(t);
  const answers: string[] = [];
  for (let i = 0; i < 12; i++) answers.push(await answer(authenticate(bearer(`arb_guess${i}`, '203.0.113.9'), keys, throttle)));
  t.same(answers, [...Array<string>(LIMIT).fill('401 authentication_error'), ...Array<string>(12 - LIMIT).fill('429 too_many_requests')]);
  t.equal(verified(), LIMIT, 'only the keys answered 401 were looked up');
  t.equal(
    await answer(authenticate(bearer(secret, '203.0.113.9'), keys, throttle)),
    '429 too_many_requests',
    'the right key from that address answers as a wrong one',
  );
  t.equal(verified(), LIMIT, 'and is not looked up either');
  t.equal(await answer(authenticate(bearer(secret, '198.51.100.7'), keys, throttle)), '200', 'the right key from another address works');
  t.equal(await answer(authenticate(bearer(secret, '::ffff:198.51.100.7'), keys, throttle)), '200');

  const refusal = (await authenticate(bearer('arb_x', '203.0.113.9'), keys, throttle).catch((e: unknown) => e)) as ApiError;
  t.ok(refusal.retryAfterSeconds! >= 1 && refusal.retryAfterSeconds! <= 300, `Retry-After ${refusal.retryAfterSeconds} s: the rest of the window`);
  t.match(refusal.context, { limit: LIMIT, window_seconds: 300 });
  t.match(refusal.message, /Too many wrong API keys from this address/);
});

t.test('a burst of concurrent guesses learns no more than the limit', async (t) => {
  const { throttle, keys } = await setUp(t);
  const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => answer(authenticate(bearer(`arb_burst${i}`, '203.0.113.9'), keys, throttle))));
  t.equal(answers.filter((a) => a === '401 authentication_error').length, LIMIT, `exactly ${LIMIT} answered as wrong`);
  t.equal(answers.filter((a) => a === '429 too_many_requests').length, 60 - LIMIT);
});

t.test('an IPv6 client is counted by its /64; API keys and the console are counted apart', async (t) => {
  const { throttle, keys } = await setUp(t);
  for (let i = 0; i < LIMIT; i++) await answer(authenticate(bearer('arb_x', `2001:db8:1:2::${i + 1}`), keys, throttle));
  t.equal(await answer(authenticate(bearer('arb_x', '2001:db8:1:2:ffff::9'), keys, throttle)), '429 too_many_requests', 'another address of the same /64');
  t.equal(await answer(authenticate(bearer('arb_x', '2001:db8:1:3::1'), keys, throttle)), '401 authentication_error', 'the next /64');
  const token = 'console-token-0123456789';
  const console = fakeRequest({ 'x-arbitra-console-token': token, 'x-arbitra-user-email': 'op@example.eu' }, { ip: '2001:db8:1:2::1' });
  t.equal(await answer(consoleIdentity(console, token, throttle)), '200', 'the console still opens from the address its API keys are refused from');
});

t.test('wrong console tokens are throttled; the session cookie is not counted', async (t) => {
  const { throttle } = await setUp(t);
  const token = 'console-token-0123456789';
  const asked = (given: string, ip = '203.0.113.9') =>
    answer(consoleIdentity(fakeRequest({ 'x-arbitra-console-token': given, 'x-arbitra-user-email': 'op@example.eu' }, { ip }), token, throttle));
  for (let i = 0; i < 10; i++) await answer(consoleIdentity(fakeRequest({ cookie: 'arbitra_console=forged.value' }, { ip: '203.0.113.9' }), token, throttle));
  t.equal(await asked(token), '200', 'ten forged cookies cost the address nothing');
  for (let i = 0; i < LIMIT; i++) t.equal(await asked(`wrong-${i}`), '401 authentication_error');
  t.equal(await asked('wrong-again'), '429 too_many_requests');
  t.equal(await asked(token), '429 too_many_requests', 'the right token from that address answers as a wrong one');
  t.equal(await asked(token, '198.51.100.7'), '200', 'and opens from another');
});

t.test('a success neither counts nor resets the count', async (t) => {
  const { throttle, secret, keys, store } = await setUp(t);
  const ip = '203.0.113.9';
  for (let i = 0; i < LIMIT - 1; i++) {
    await answer(authenticate(bearer('arb_x', ip), keys, throttle));
    t.equal(await answer(authenticate(bearer(secret, ip), keys, throttle)), '200');
  }
  t.equal((await store.counters.secretFailures(`api_key ${ip}`, 300)).count, LIMIT - 1, 'only the wrong keys were counted');
  t.equal(await answer(authenticate(bearer('arb_x', ip), keys, throttle)), '401 authentication_error');
  t.equal(await answer(authenticate(bearer(secret, ip), keys, throttle)), '429 too_many_requests', 'a tenant with a valid key cannot keep its window open');
});

t.test('a missing or malformed header is no guess and is not counted', async (t) => {
  const { throttle, keys, store } = await setUp(t);
  for (let i = 0; i < 10; i++) {
    await answer(authenticate(fakeRequest({}, { ip: '203.0.113.9' }), keys, throttle));
    await answer(authenticate(fakeRequest({ authorization: 'Basic abc' }, { ip: '203.0.113.9' }), keys, throttle));
  }
  t.equal((await store.counters.secretFailures('api_key 203.0.113.9', 300)).count, 0);
});
