import t from 'tap';
import { limitsPreset, loadLimitsConfig, LIMITS_DEFAULTS, LIMITS_PRESETS } from '../../src/limits/config.js';
import { ConfigError, loadConfig } from '../../src/config.js';

t.test('defaults: self-hosted, no quotas, no billing, generous per-key limits', async (t) => {
  const c = loadLimitsConfig({});
  t.same(c, LIMITS_DEFAULTS);
  t.equal(c.preset, 'self-hosted');
  t.equal(c.freeDailyDecisions, 0, 'no daily allowance');
  t.equal(c.monthlyCap, 0, 'no monthly cap');
  t.equal(c.billing, false);
  t.equal(c.requestsPerSecond, 200);
  t.equal(c.maxInFlight, 32);
  t.equal(c.retentionDays, 30);
  t.equal(c.idempotencyTtlSeconds, 86400);
  t.equal(c.idempotencyMax, 2048);
});

t.test('the hosted preset sets the per-key and per-user limits, nothing else', async (t) => {
  const c = loadLimitsConfig({}, 'hosted');
  t.same(
    { preset: c.preset, rps: c.requestsPerSecond, inFlight: c.maxInFlight, daily: c.freeDailyDecisions, cap: c.monthlyCap },
    { preset: 'hosted', rps: 10, inFlight: 4, daily: 1000, cap: 20000 },
  );
  t.same({ ...c, ...LIMITS_PRESETS['self-hosted'], preset: 'self-hosted' }, LIMITS_DEFAULTS, 'every other value is the default');
  t.equal(loadLimitsConfig({ ARBITRA_BILLING: 'on' }, 'hosted').billing, true, 'billing still follows ARBITRA_BILLING');
});

t.test('every variable overrides its preset value', async (t) => {
  const env = { ARBITRA_RATE_LIMIT_RPS: '7', ARBITRA_MAX_IN_FLIGHT: '3', ARBITRA_FREE_DAILY_DECISIONS: '50', ARBITRA_MONTHLY_CAP: '900' };
  for (const preset of ['self-hosted', 'hosted'] as const) {
    const c = loadLimitsConfig(env, preset);
    t.same([c.preset, c.requestsPerSecond, c.maxInFlight, c.freeDailyDecisions, c.monthlyCap], [preset, 7, 3, 50, 900], preset);
  }
  const off = loadLimitsConfig({ ARBITRA_FREE_DAILY_DECISIONS: '0', ARBITRA_MONTHLY_CAP: '0' }, 'hosted');
  t.same([off.freeDailyDecisions, off.monthlyCap, off.requestsPerSecond], [0, 0, 10], '0 turns the hosted quotas off and keeps its rate');
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

t.test("the idempotency cache: per key, and in all at least one key's worth", async (t) => {
  const c = loadLimitsConfig({});
  t.equal(c.idempotencyMaxTotal, 65536);
  t.ok(c.idempotencyMaxTotal >= 32 * c.idempotencyMax, 'no one key comes near the total');
  t.equal(loadLimitsConfig({ ARBITRA_IDEMPOTENCY_MAX: '100000' }).idempotencyMaxTotal, 100000, 'the total follows a per-key cap set above it');
  t.equal(loadLimitsConfig({ ARBITRA_IDEMPOTENCY_MAX: '10', ARBITRA_IDEMPOTENCY_MAX_TOTAL: '10' }).idempotencyMaxTotal, 10);
  t.throws(() => loadLimitsConfig({ ARBITRA_IDEMPOTENCY_MAX: '10', ARBITRA_IDEMPOTENCY_MAX_TOTAL: '9' }), {
    message: 'ARBITRA_IDEMPOTENCY_MAX_TOTAL must be an integer >= 10, got "9"',
  });
});

t.test('the trace quota per key: count and bytes', async (t) => {
  const c = loadLimitsConfig({});
  t.same([c.tracesMax, c.tracesMaxBytes], [100_000, 64 * 1024 * 1024]);
  const set = loadLimitsConfig({ ARBITRA_TRACES_MAX: '10', ARBITRA_TRACES_MAX_BYTES: '4096' });
  t.same([set.tracesMax, set.tracesMaxBytes], [10, 4096]);
  t.throws(() => loadLimitsConfig({ ARBITRA_TRACES_MAX: '0' }), { message: /^ARBITRA_TRACES_MAX must be an integer >= 1/ });
});

t.test('invalid values throw a one-line error naming the variable', async (t) => {
  const bad: Record<string, string> = {
    ARBITRA_RATE_LIMIT_RPS: '0',
    ARBITRA_MAX_IN_FLIGHT: '2.5',
    ARBITRA_MONTHLY_CAP: 'lots',
    ARBITRA_FREE_DAILY_DECISIONS: '-1',
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

t.test('preset names', async (t) => {
  t.equal(limitsPreset('hosted', '--limits'), 'hosted');
  t.equal(limitsPreset(' self-hosted ', 'ARBITRA_LIMITS'), 'self-hosted');
  t.throws(() => limitsPreset('cloud', 'ARBITRA_LIMITS'), { message: 'ARBITRA_LIMITS must be one of self-hosted, hosted, got "cloud"' });
});

t.test('arbitra serve: --limits wins over ARBITRA_LIMITS; an unknown preset is a ConfigError naming the valid ones', async (t) => {
  t.equal(loadConfig([]).limits.preset, 'self-hosted');
  t.equal(loadConfig([], { ARBITRA_LIMITS: 'hosted' }).limits.monthlyCap, 20000);
  const flagged = loadConfig(['--limits', 'self-hosted'], { ARBITRA_LIMITS: 'hosted' }).limits;
  t.same([flagged.preset, flagged.monthlyCap], ['self-hosted', 0], 'the flag wins');
  const overridden = loadConfig(['--limits=hosted'], { ARBITRA_MONTHLY_CAP: '5' }).limits;
  t.same([overridden.preset, overridden.monthlyCap, overridden.freeDailyDecisions], ['hosted', 5, 1000], "a variable still overrides the flag's preset");
  t.throws(() => loadConfig(['--limits', 'free']), new ConfigError('--limits must be one of self-hosted, hosted, got "free"'));
  t.throws(() => loadConfig([], { ARBITRA_LIMITS: 'free' }), new ConfigError('ARBITRA_LIMITS must be one of self-hosted, hosted, got "free"'));
});
