// Limits, billing and lifetimes, read once from ARBITRA_* environment variables.
// Every value has a documented default; an invalid value throws with a one-line message so the
// CLI can print it and exit non-zero instead of starting with a limit nobody asked for.

export interface LimitsConfig {
  /** Per-key decision requests per second (ARBITRA_RATE_LIMIT_RPS, default 10). */
  requestsPerSecond: number;
  /** Per-key decision requests in flight at once (ARBITRA_MAX_IN_FLIGHT, default 4). */
  maxInFlight: number;
  /** Free decisions per user per UTC day (ARBITRA_FREE_DAILY_DECISIONS, default 1000). */
  freeDailyDecisions: number;
  /** Decisions per user per UTC month (ARBITRA_MONTHLY_CAP, default 20000). */
  monthlyCap: number;
  /** Billing mode (ARBITRA_BILLING: on/off, true/false, 1/0; default off). */
  billing: boolean;
  /** Price in EUR per 1,000 input tokens when billing is on (ARBITRA_PRICE_EUR_PER_1K_INPUT_TOKENS, default 0.002). */
  pricePer1kInputTokensEur: number;
  /** Balance in EUR a new user starts with when billing is on (ARBITRA_STARTING_BALANCE_EUR, default 0). */
  startingBalanceEur: number;
  /** Where a user adds credit; sent in 402 errors (ARBITRA_TOPUP_URL). */
  topupUrl: string;
  /** Where a user sets up pay-as-you-go; sent in 402 errors (ARBITRA_PAYG_URL). */
  paygUrl: string;
  /** Requests per IP per minute on unauthenticated routes (ARBITRA_IP_LIMIT_PER_MINUTE, default 60). */
  ipRequestsPerMinute: number;
  /** Lifetime of a console verification token (ARBITRA_VERIFICATION_TOKEN_TTL_SECONDS, default 86400). */
  verificationTokenTtlSeconds: number;
  /** Days a retained request is kept (ARBITRA_RETENTION_DAYS, default 30). */
  retentionDays: number;
  /** How often the purge worker runs (ARBITRA_PURGE_INTERVAL_SECONDS, default 3600). */
  purgeIntervalSeconds: number;
  /** Idempotency entry lifetime (ARBITRA_IDEMPOTENCY_TTL_SECONDS, default 86400). */
  idempotencyTtlSeconds: number;
  /** Idempotency entries kept per API key, oldest evicted (ARBITRA_IDEMPOTENCY_MAX, default 2048). */
  idempotencyMax: number;
}

export const LIMITS_DEFAULTS: Readonly<LimitsConfig> = Object.freeze({
  requestsPerSecond: 10,
  maxInFlight: 4,
  freeDailyDecisions: 1000,
  monthlyCap: 20000,
  billing: false,
  pricePer1kInputTokensEur: 0.002,
  startingBalanceEur: 0,
  topupUrl: '/console/billing/topup',
  paygUrl: '/console/billing/pay-as-you-go',
  ipRequestsPerMinute: 60,
  verificationTokenTtlSeconds: 86400,
  retentionDays: 30,
  purgeIntervalSeconds: 3600,
  idempotencyTtlSeconds: 86400,
  idempotencyMax: 2048,
});

function readInt(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min) {
    throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function readDecimal(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const trimmed = raw.trim();
  const value = Number(trimmed);
  if (!/^\d+(\.\d+)?$/.test(trimmed) || !Number.isFinite(value)) {
    throw new Error(`${name} must be a non-negative decimal number, got ${JSON.stringify(raw)}`);
  }
  return value;
}

export function readBool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'on', 'yes'].includes(v)) return true;
  if (['0', 'false', 'off', 'no'].includes(v)) return false;
  throw new Error(`${name} must be on or off (true/false, 1/0), got ${JSON.stringify(raw)}`);
}

function readUrl(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const v = raw.trim();
  // A path is allowed so a console served on the same host can be linked without a base URL.
  if (v.startsWith('/')) return v;
  try {
    const u = new URL(v);
    if (u.protocol === 'https:' || u.protocol === 'http:') return v;
  } catch {
    // falls through to the error below
  }
  throw new Error(`${name} must be an http(s) URL or a path starting with /, got ${JSON.stringify(raw)}`);
}

export function loadLimitsConfig(env: NodeJS.ProcessEnv): LimitsConfig {
  const d = LIMITS_DEFAULTS;
  return {
    requestsPerSecond: readInt(env, 'ARBITRA_RATE_LIMIT_RPS', d.requestsPerSecond, 1),
    maxInFlight: readInt(env, 'ARBITRA_MAX_IN_FLIGHT', d.maxInFlight, 1),
    freeDailyDecisions: readInt(env, 'ARBITRA_FREE_DAILY_DECISIONS', d.freeDailyDecisions, 0),
    monthlyCap: readInt(env, 'ARBITRA_MONTHLY_CAP', d.monthlyCap, 0),
    billing: readBool(env, 'ARBITRA_BILLING', d.billing),
    pricePer1kInputTokensEur: readDecimal(env, 'ARBITRA_PRICE_EUR_PER_1K_INPUT_TOKENS', d.pricePer1kInputTokensEur),
    startingBalanceEur: readDecimal(env, 'ARBITRA_STARTING_BALANCE_EUR', d.startingBalanceEur),
    topupUrl: readUrl(env, 'ARBITRA_TOPUP_URL', d.topupUrl),
    paygUrl: readUrl(env, 'ARBITRA_PAYG_URL', d.paygUrl),
    ipRequestsPerMinute: readInt(env, 'ARBITRA_IP_LIMIT_PER_MINUTE', d.ipRequestsPerMinute, 1),
    verificationTokenTtlSeconds: readInt(env, 'ARBITRA_VERIFICATION_TOKEN_TTL_SECONDS', d.verificationTokenTtlSeconds, 1),
    retentionDays: readInt(env, 'ARBITRA_RETENTION_DAYS', d.retentionDays, 1),
    purgeIntervalSeconds: readInt(env, 'ARBITRA_PURGE_INTERVAL_SECONDS', d.purgeIntervalSeconds, 1),
    idempotencyTtlSeconds: readInt(env, 'ARBITRA_IDEMPOTENCY_TTL_SECONDS', d.idempotencyTtlSeconds, 1),
    idempotencyMax: readInt(env, 'ARBITRA_IDEMPOTENCY_MAX', d.idempotencyMax, 1),
  };
}
