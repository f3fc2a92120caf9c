// --shutdown-grace-seconds / ARBITRA_SHUTDOWN_GRACE_SECONDS: how long a stopping server answers the
// requests it holds (src/cluster hands it to the HTTP servers and to the primary's worker kill timer).
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { DEFAULT_SHUTDOWN_GRACE_SECONDS } from '../../src/http/types.js';

t.test('30 s by default, the flag or the variable otherwise, and a clear refusal', async (t) => {
  t.equal(DEFAULT_SHUTDOWN_GRACE_SECONDS, 30);
  t.equal(loadConfig([], {}).shutdownGraceSeconds, 30);
  t.equal(loadConfig(['--shutdown-grace-seconds', '90'], { ARBITRA_SHUTDOWN_GRACE_SECONDS: '5' }).shutdownGraceSeconds, 90, 'the flag wins');
  t.equal(loadConfig([], { ARBITRA_SHUTDOWN_GRACE_SECONDS: '0' }).shutdownGraceSeconds, 0, '0: close at once');
  t.throws(() => loadConfig([], { ARBITRA_SHUTDOWN_GRACE_SECONDS: '-1' }), {
    constructor: ConfigError,
    message: 'ARBITRA_SHUTDOWN_GRACE_SECONDS must be an integer from 0 to 86400, got "-1"',
  });
});
