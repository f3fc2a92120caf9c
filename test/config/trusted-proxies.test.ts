// --trusted-proxies / ARBITRA_TRUSTED_PROXIES and the wrong-secret limit: read once, refused clearly.
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';

t.test('no proxy is trusted unless named; the flag wins over the variable', async (t) => {
  t.same(loadConfig([], {}).trustedProxies, []);
  t.equal(loadConfig([], { ARBITRA_TRUSTED_PROXIES: '10.0.1.5' }).trustedProxies.length, 1);
  t.equal(
    loadConfig(['--trusted-proxies', '10.0.1.5,10.0.2.0/24,fd00::/8'], { ARBITRA_TRUSTED_PROXIES: '10.0.1.5' }).trustedProxies.length,
    3,
    'the flag wins',
  );
  t.throws(() => loadConfig(['--trusted-proxies', '10.0.1.5,haproxy'], {}), {
    constructor: ConfigError,
    message: '--trusted-proxies: "haproxy" is not an IP address or CIDR block',
  });
  t.throws(() => loadConfig([], { ARBITRA_TRUSTED_PROXIES: '0.0.0.0/0' }), {
    constructor: ConfigError,
    message: /^ARBITRA_TRUSTED_PROXIES: .*trust every address/,
  });
});

t.test('the wrong-secret limit: 20 per 300 s by default, at least 1', async (t) => {
  const { limits } = loadConfig([], {});
  t.same([limits.secretFailureLimit, limits.secretFailureWindowSeconds], [20, 300]);
  const set = loadConfig([], { ARBITRA_SECRET_FAILURE_LIMIT: '5', ARBITRA_SECRET_FAILURE_WINDOW_SECONDS: '60' }).limits;
  t.same([set.secretFailureLimit, set.secretFailureWindowSeconds], [5, 60]);
  t.throws(() => loadConfig([], { ARBITRA_SECRET_FAILURE_LIMIT: '0' }), {
    constructor: ConfigError,
    message: /ARBITRA_SECRET_FAILURE_LIMIT must be an integer >= 1/,
  });
});
