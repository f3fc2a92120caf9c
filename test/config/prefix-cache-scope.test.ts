// `--prefix-cache-scope` / ARBITRA_PREFIX_CACHE_SCOPE: each account's own cache by default, one
// cache for every key on request, and a refusal naming the values.
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';

t.test('account unless asked; global as the flag or the variable', async (t) => {
  t.equal(loadConfig([], {}).prefixCacheScope, 'account');
  t.equal(loadConfig(['--prefix-cache-scope', 'global'], {}).prefixCacheScope, 'global');
  t.equal(loadConfig([], { ARBITRA_PREFIX_CACHE_SCOPE: 'global' }).prefixCacheScope, 'global');
  t.equal(loadConfig(['--prefix-cache-scope=account'], { ARBITRA_PREFIX_CACHE_SCOPE: 'global' }).prefixCacheScope, 'account', 'the flag wins');
});

t.test('anything else is refused, naming the setting and the values', async (t) => {
  t.throws(() => loadConfig(['--prefix-cache-scope', 'key'], {}), new ConfigError('--prefix-cache-scope must be "account" or "global", got "key"'));
  t.throws(
    () => loadConfig([], { ARBITRA_PREFIX_CACHE_SCOPE: 'none' }),
    new ConfigError('ARBITRA_PREFIX_CACHE_SCOPE must be "account" or "global", got "none"'),
  );
});
