// Limits, billing and lifetimes, read once from ARBITRA_* environment variables on top of a preset.
// Every value has a documented default; an invalid value throws with a one-line message so the
// CLI can print it and exit non-zero instead of starting with a limit nobody asked for.
import { IDEMPOTENCY_DEFAULTS } from '../store/common.js';

export interface LimitsConfig {
  /** The preset the four per-key and per-user limits below started from (--limits / ARBITRA_LIMITS). */
  preset: LimitsPreset;
  /** Per-key decision requests per second (ARBITRA_RATE_LIMIT_RPS). */
  requestsPerSecond: number;
  /** Per-key decision requests in flight at once (ARBITRA_MAX_IN_FLIGHT). */
  maxInFlight: number;
  /** Free decisions per user per UTC day (ARBITRA_FREE_DAILY_DECISIONS); 0 means no allowance is enforced. */
  freeDailyDecisions: number;
  /** Decisions per user per UTC month (ARBITRA_MONTHLY_CAP); 0 means no cap. */
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
  /**
   * Wrong secrets (API keys, console tokens) one address may send per window before it is refused
   * with 429 without its secret being checked (ARBITRA_SECRET_FAILURE_LIMIT, default 20).
   */
  secretFailureLimit: number;
  /** The fixed window those failures are counted in (ARBITRA_SECRET_FAILURE_WINDOW_SECONDS, default 300). */
  secretFailureWindowSeconds: number;
  /** Lifetime of a console verification token (ARBITRA_VERIFICATION_TOKEN_TTL_SECONDS, default 86400). */
  verificationTokenTtlSeconds: number;
  /** Days a retained request is kept (ARBITRA_RETENTION_DAYS, default 30). */
  retentionDays: number;
  /** How often the purge worker runs (ARBITRA_PURGE_INTERVAL_SECONDS, default 3600). */
  purgeIntervalSeconds: number;
  /** Idempotency entry lifetime (ARBITRA_IDEMPOTENCY_TTL_SECONDS, default 86400). */
  idempotencyTtlSeconds: number;
  /** Idempotency entries kept per API key, its oldest evicted (ARBITRA_IDEMPOTENCY_MAX, default 2048). */
  idempotencyMax: number;
  /**
   * Idempotency entries kept for all keys together, the oldest of any key evicted past it
   * (ARBITRA_IDEMPOTENCY_MAX_TOTAL, default 65536); at least idempotencyMax, so no one key alone
   * evicts another's.
   */
  idempotencyMaxTotal: number;
  /** Traces one API key may keep at once (ARBITRA_TRACES_MAX, default 100000); past it 429 quota_exceeded. */
  tracesMax: number;
  /** Bytes of traces (as JSON) one API key may keep at once (ARBITRA_TRACES_MAX_BYTES, default 64 MiB). */
  tracesMaxBytes: number;
  /** Questions one decision request may ask (ARBITRA_MAX_QUESTIONS, default 100); 0 means no cap. */
  maxQuestions: number;
  /** Scored branches (questions × passes) one decision request may need (ARBITRA_MAX_BRANCHES, default 800); 0 means no cap. */
  maxBranches: number;
  /** Seconds a decision may run before it is cancelled and answered 504 (ARBITRA_REQUEST_DEADLINE_SECONDS, default 600); 0 means none. */
  requestDeadlineSeconds: number;
  /**
   * Prompt tokens one decision request may run through the model, its state once plus every
   * branch (ARBITRA_MAX_REQUEST_TOKENS, default 0: no fixed cap, admission by cost bounds it).
   */
  maxRequestTokens: number;
  /**
   * ARBITRA_ADMISSION: `cost` (default) refuses before any work a request the engine reckons it
   * cannot finish before the deadline (422 alone, 429 behind the queue); `off` admits everything
   * and lets the deadline cancel it (504).
   */
  admission: 'cost' | 'off';
}

type PresetLimits = Pick<LimitsConfig, 'requestsPerSecond' | 'maxInFlight' | 'freeDailyDecisions' | 'monthlyCap'>;

/** What each preset sets; every value still yields to its own ARBITRA_* variable. */
export const LIMITS_PRESETS = {
  // One operator serving their own applications: nothing caps a user, and the per-key limits only
  // stop a runaway client. The engine gives request prefixes at most half its sequences (16 requests
  // with the default 32) and queues the rest, so 32 in flight lets one key keep it full with a batch
  // waiting; beyond that a client only lengthens the queue until every caller times out.
  // With 32 in flight a key reaches 200 requests/s only when decisions take under 160 ms.
  'self-hosted': { requestsPerSecond: 200, maxInFlight: 32, freeDailyDecisions: 0, monthlyCap: 0 },
  // A server shared by people who do not run it: a free allowance and a cap per user, and per-key
  // limits tight enough that one user's client cannot crowd out the others.
  hosted: { requestsPerSecond: 10, maxInFlight: 4, freeDailyDecisions: 1000, monthlyCap: 20000 },
} as const satisfies Record<string, PresetLimits>;

export type LimitsPreset = keyof typeof LIMITS_PRESETS;

const PRESET_NAMES = Object.keys(LIMITS_PRESETS) as LimitsPreset[];

/** The preset a --limits or ARBITRA_LIMITS value names; `source` is which of them, for the error. */
export function limitsPreset(value: string, source: string): LimitsPreset {
  const name = value.trim();
  if ((PRESET_NAMES as string[]).includes(name)) return name as LimitsPreset;
  throw new Error(`${source} must be one of ${PRESET_NAMES.join(', ')}, got ${JSON.stringify(value)}`);
}

export const LIMITS_DEFAULTS: Readonly<LimitsConfig> = Object.freeze({
  preset: 'self-hosted',
  ...LIMITS_PRESETS['self-hosted'],
  billing: false,
  pricePer1kInputTokensEur: 0.002,
  startingBalanceEur: 0,
  topupUrl: '/console/billing/topup',
  paygUrl: '/console/billing/pay-as-you-go',
  ipRequestsPerMinute: 60,
  // 20 wrong secrets per 5 minutes is about 5,800 guesses a day from one address: hopeless against a
  // 256-bit API key or a console token of 16 random characters, and still far from a lockout for a
  // person who mistypes or a client retrying a revoked key a few times before someone notices.
  secretFailureLimit: 20,
  secretFailureWindowSeconds: 300,
  verificationTokenTtlSeconds: 86400,
  retentionDays: 30,
  purgeIntervalSeconds: 3600,
  idempotencyTtlSeconds: IDEMPOTENCY_DEFAULTS.ttlSeconds,
  idempotencyMax: IDEMPOTENCY_DEFAULTS.max,
  idempotencyMaxTotal: IDEMPOTENCY_DEFAULTS.maxTotal,
  // Traces are kept only while their decision is retained (30 days by default): 100,000 is a
  // decision with a few questions every minute of that, and at the usual 200 to 600 bytes a trace
  // fits in 64 MiB; a trace's metadata may take 16 KiB, so the bytes are bounded on their own.
  tracesMax: 100_000,
  tracesMaxBytes: 64 * 1024 * 1024,
  // Every request the interface allows in practice fits: 100 questions of up to 8 passes each, and
  // a 255-option choice is one question. One request beyond that would hold the engine for minutes
  // on CPU; the scheduler shares batches fairly, but the work still has to be done.
  maxQuestions: 100,
  maxBranches: 800,
  maxRequestTokens: 0,
  admission: 'cost',
  // A 30,000-token state takes minutes on a 2-core CPU; past ten minutes nobody is still waiting.
  requestDeadlineSeconds: 600,
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

function readChoice<T extends string>(env: NodeJS.ProcessEnv, name: string, choices: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const v = raw.trim().toLowerCase();
  if ((choices as readonly string[]).includes(v)) return v as T;
  throw new Error(`${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(raw)}`);
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

export function loadLimitsConfig(env: NodeJS.ProcessEnv, preset: LimitsPreset = LIMITS_DEFAULTS.preset): LimitsConfig {
  const d = { ...LIMITS_DEFAULTS, ...LIMITS_PRESETS[preset] };
  const idempotencyMax = readInt(env, 'ARBITRA_IDEMPOTENCY_MAX', d.idempotencyMax, 1);
  return {
    preset,
    requestsPerSecond: readInt(env, 'ARBITRA_RATE_LIMIT_RPS', d.requestsPerSecond, 1),
    maxInFlight: readInt(env, 'ARBITRA_MAX_IN_FLIGHT', d.maxInFlight, 1),
    // 0 turns these two off (the counters still count); the per-key limits above cannot be turned off.
    freeDailyDecisions: readInt(env, 'ARBITRA_FREE_DAILY_DECISIONS', d.freeDailyDecisions, 0),
    monthlyCap: readInt(env, 'ARBITRA_MONTHLY_CAP', d.monthlyCap, 0),
    billing: readBool(env, 'ARBITRA_BILLING', d.billing),
    pricePer1kInputTokensEur: readDecimal(env, 'ARBITRA_PRICE_EUR_PER_1K_INPUT_TOKENS', d.pricePer1kInputTokensEur),
    startingBalanceEur: readDecimal(env, 'ARBITRA_STARTING_BALANCE_EUR', d.startingBalanceEur),
    topupUrl: readUrl(env, 'ARBITRA_TOPUP_URL', d.topupUrl),
    paygUrl: readUrl(env, 'ARBITRA_PAYG_URL', d.paygUrl),
    ipRequestsPerMinute: readInt(env, 'ARBITRA_IP_LIMIT_PER_MINUTE', d.ipRequestsPerMinute, 1),
    secretFailureLimit: readInt(env, 'ARBITRA_SECRET_FAILURE_LIMIT', d.secretFailureLimit, 1),
    secretFailureWindowSeconds: readInt(env, 'ARBITRA_SECRET_FAILURE_WINDOW_SECONDS', d.secretFailureWindowSeconds, 1),
    verificationTokenTtlSeconds: readInt(env, 'ARBITRA_VERIFICATION_TOKEN_TTL_SECONDS', d.verificationTokenTtlSeconds, 1),
    retentionDays: readInt(env, 'ARBITRA_RETENTION_DAYS', d.retentionDays, 1),
    purgeIntervalSeconds: readInt(env, 'ARBITRA_PURGE_INTERVAL_SECONDS', d.purgeIntervalSeconds, 1),
    idempotencyTtlSeconds: readInt(env, 'ARBITRA_IDEMPOTENCY_TTL_SECONDS', d.idempotencyTtlSeconds, 1),
    idempotencyMax,
    idempotencyMaxTotal: readInt(env, 'ARBITRA_IDEMPOTENCY_MAX_TOTAL', Math.max(d.idempotencyMaxTotal, idempotencyMax), idempotencyMax),
    tracesMax: readInt(env, 'ARBITRA_TRACES_MAX', d.tracesMax, 1),
    tracesMaxBytes: readInt(env, 'ARBITRA_TRACES_MAX_BYTES', d.tracesMaxBytes, 1),
    maxQuestions: readInt(env, 'ARBITRA_MAX_QUESTIONS', d.maxQuestions, 0),
    maxBranches: readInt(env, 'ARBITRA_MAX_BRANCHES', d.maxBranches, 0),
    requestDeadlineSeconds: readInt(env, 'ARBITRA_REQUEST_DEADLINE_SECONDS', d.requestDeadlineSeconds, 0),
    maxRequestTokens: readInt(env, 'ARBITRA_MAX_REQUEST_TOKENS', d.maxRequestTokens, 0),
    admission: readChoice(env, 'ARBITRA_ADMISSION', ['cost', 'off'] as const, d.admission),
  };
}
