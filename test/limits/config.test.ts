import t from 'tap';
import { loadLimitsConfig, LIMITS_DEFAULTS } from '../../src/limits/config.js';

t.test('defaults', async (t) => {
  const c = loadLimitsConfig({});
  t.same(c, LIMITS_DEFAULTS);
  t.equal(c.retentionDays, 30);
  t.equal(c.idempotencyTtlSeconds, 86400);
  t.equal(c.idempotencyMax, 2048);
  t.equal(c.billing, false);
});

t.test('env overrides', async (t) => {
  const c = loadLimitsConfig({
    ARBITRA_RATE_LIMIT_RPS: '5',
    ARBITRA_BILLING: 'on',
    ARBITRA_PRICE_EUR_PER_1K_INPUT_TOKENS: '0.0125',
    ARBITRA_TOPUP_URL: 'https://x.eu/t',
    ARBITRA_RETENTION_DAYS: '7',
  });
  t.equal(c.requestsPerSecond, 5);
  t.equal(c.billing, true);
  t.equal(c.pricePer1kInputTokensEur, 0.0125);
  t.equal(c.topupUrl, 'https://x.eu/t');
  t.equal(c.retentionDays, 7);
});

t.test('invalid values throw a one-line error naming the variable', async (t) => {
  const bad: Record<string, string> = {
    ARBITRA_RATE_LIMIT_RPS: '0',
    ARBITRA_MAX_IN_FLIGHT: '2.5',
    ARBITRA_MONTHLY_CAP: 'lots',
    ARBITRA_BILLING: 'maybe',
    ARBITRA_PRICE_EUR_PER_1K_INPUT_TOKENS: '-1',
    ARBITRA_TOPUP_URL: 'ftp://x',
    ARBITRA_IDEMPOTENCY_MAX: '-3',
  };
  for (const [name, value] of Object.entries(bad)) {
    t.throws(() => loadLimitsConfig({ [name]: value }), { message: new RegExp(`^${name} must`) }, name);
    try {
      loadLimitsConfig({ [name]: value });
    } catch (err) {
      t.notOk((err as Error).message.includes('\n'), `${name}: one line`);
    }
  }
});
