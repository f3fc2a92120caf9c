import t from 'tap';
import { loadLimitsConfig } from '../../src/limits/config.js';
import { limitsLine } from '../../src/limits/summary.js';

t.test('one line naming the preset and every limit that can refuse a call', async (t) => {
  t.equal(limitsLine(loadLimitsConfig({})), 'arbitra limits (self-hosted): 200 requests/s and 32 in flight per key, no daily allowance, no monthly cap');
  t.equal(
    limitsLine(loadLimitsConfig({}, 'hosted')),
    'arbitra limits (hosted): 10 requests/s and 4 in flight per key, 1000 free decisions per user per day, monthly cap 20000 per user',
  );
});

t.test('with billing on the balance replaces the allowance; no URL or secret is logged', async (t) => {
  const line = limitsLine(loadLimitsConfig({ ARBITRA_BILLING: 'on', ARBITRA_TOPUP_URL: 'https://pay.example/secret-path' }, 'hosted'));
  t.equal(line, 'arbitra limits (hosted): 10 requests/s and 4 in flight per key, billing on, monthly cap 20000 per user');
});
