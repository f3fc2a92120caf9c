import t from 'tap';
import { authenticate, consoleIdentity } from '../../src/api/auth.js';
import { ApiError, ValidationFailure } from '../../src/api/errors.js';
import { createSecretThrottle } from '../../src/api/secret-throttle.js';
import { loadLimitsConfig } from '../../src/limits/config.js';
import { openStore } from '../../src/store/index.js';
import { fakeRequest } from './helpers.js';

const req = (headers: Record<string, string>) => fakeRequest(headers);

t.test('authenticate', async (t) => {
  const store = await openStore(t.testdir());
  t.teardown(() => store.close());
  const throttle = createSecretThrottle(store, loadLimitsConfig({}));
  const { record, secret } = await store.keys.create('k@x.io');
  t.equal((await authenticate(req({ authorization: `Bearer ${secret}` }), store.keys, throttle)).id, record.id);
  t.equal((await authenticate(req({ authorization: `bearer   ${secret} ` }), store.keys, throttle)).id, record.id, 'scheme case-insensitive');
  const cases: [Record<string, string>, RegExp][] = [
    [{}, /Missing API key/],
    [{ authorization: secret }, /Malformed/],
    [{ authorization: `Basic ${secret}` }, /Malformed/],
    [{ authorization: 'Bearer arb_unknown' }, /Invalid API key/],
  ];
  for (const [headers, message] of cases) {
    await t.rejects(authenticate(req(headers), store.keys, throttle), { code: 'authentication_error', status: 401, message });
  }
  await store.keys.revoke(record.id, null);
  await t.rejects(authenticate(req({ authorization: `Bearer ${secret}` }), store.keys, throttle), { code: 'authentication_error' });
});

t.test('consoleIdentity', async (t) => {
  const store = await openStore(t.testdir());
  t.teardown(() => store.close());
  const throttle = createSecretThrottle(store, loadLimitsConfig({}));
  const ok = { 'x-arbitra-console-token': 'tok', 'x-arbitra-user-email': ' Me@Example.ORG ' };
  t.same(await consoleIdentity(req(ok), 'tok', throttle), { email: 'me@example.org' });
  const statusOf = (headers: Record<string, string>, token: string | undefined): Promise<number | string> =>
    consoleIdentity(req(headers), token, throttle).then(
      () => 'no error',
      (e: unknown) => (e instanceof ApiError || e instanceof ValidationFailure ? e.status : String(e)),
    );
  t.equal(await statusOf(ok, undefined), 503);
  t.equal(await statusOf(ok, ''), 503);
  t.equal(await statusOf({ ...ok, 'x-arbitra-console-token': 'tok2' }, 'tok'), 401);
  t.equal(await statusOf({ 'x-arbitra-user-email': 'a@b.io' }, 'tok'), 401);
  t.equal(await statusOf({ ...ok, 'x-arbitra-user-email': 'a@b' }, 'tok'), 422);
});
