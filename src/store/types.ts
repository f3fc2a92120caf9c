// The contract of every store backend: one interface per job, all asynchronous, so a backend that
// talks to a server implements the same surface as the embedded LMDB one (src/store/*.ts).
// Every write that acknowledges a client resolves only once it is durable, before the response goes
// out; a read resolves with what every process and node committed before it began.

export interface UserRecord {
  id: string;
  email: string;
  name: string | null;
  image: string | null;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyRecord {
  id: string;
  user_id: string;
  email: string;
  name: string;
  /** Readable start of the secret, e.g. "arb_3kF9" */
  prefix: string;
  /** e.g. "arb_3kF9…x7Qa" */
  masked: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

export interface UserStore {
  /** The user of this email, created when new; name/image are updated when given (null clears). */
  sync(email: string, profile?: { name?: string | null; image?: string | null }): Promise<UserRecord>;
  getByEmail(email: string): Promise<UserRecord | null>;
  get(id: string): Promise<UserRecord | null>;
}

export interface KeyStore {
  /** Creates the user when needed; returns the record and the full secret (shown once). */
  create(email: string, name?: string): Promise<{ record: ApiKeyRecord; secret: string }>;
  /** The active key whose secret this is; null when unknown or revoked. Marks it used. */
  verify(secret: string): Promise<ApiKeyRecord | null>;
  list(email: string): Promise<ApiKeyRecord[]>;
  get(id: string): Promise<ApiKeyRecord | null>;
  /** Revokes the key when it belongs to `email` (any owner when email is null); null when not found. */
  revoke(id: string, email: string | null): Promise<ApiKeyRecord | null>;
}

export type IdempotencyLookup = { status: 'miss' } | { status: 'hit'; response: Buffer; responseStatus: number } | { status: 'conflict' };

export interface IdempotencyStore {
  /**
   * bodyHash is the sha256 of the canonical JSON body. Entries are scoped per API key: a key keeps
   * at most idempotencyMax of them (its own oldest evicted first), and all keys together at most
   * idempotencyMaxTotal (the oldest of any key evicted first, only past that), exactly under
   * concurrent writers.
   */
  lookup(keyId: string, idempotencyKey: string, bodyHash: string): Promise<IdempotencyLookup>;
  save(keyId: string, idempotencyKey: string, bodyHash: string, responseStatus: number, response: Buffer): Promise<void>;
}

export interface RetainedRecord {
  id: string;
  key_id: string;
  request: unknown;
  response: unknown;
  /** The decision's uncalibrated distributions per question, bound to model and layout. */
  decision?: { model_sha256: string; layout: string; questions: Record<string, { kind: string; p: number[] }> };
  created_at: string;
  retention_until: string;
}

export interface RetentionStore {
  put(record: RetainedRecord): Promise<void>;
  get(keyId: string, id: string): Promise<RetainedRecord | null>;
  /** true when a record of this key was removed; false when none (or another key's). */
  delete(keyId: string, id: string): Promise<boolean>;
  /**
   * The retention_until of each of these ids that is a record of this key; an id retained by another
   * key, or by none, is absent. One round trip for a whole batch of traces.
   */
  retainedUntil(keyId: string, ids: readonly string[]): Promise<Map<string, string>>;
  /**
   * A stable pseudonym for the key, the same on every call, worker and node. Synchronous: it is an
   * HMAC under the server secret, with no state behind it.
   */
  pseudonym(keyId: string): string;
}

// --- Records added with the console, waitlist, traces and verification tokens (issue 3). ---

export interface AdmitLimits {
  requestsPerSecond: number;
  maxInFlight: number;
  /** 0: no daily allowance is enforced. */
  freeDailyDecisions: number;
  /** 0: no monthly cap. */
  monthlyCap: number;
  billing: boolean;
  startingBalanceEur: number;
}

export type AdmitResult =
  | { ok: true; slotId: string }
  | { ok: false; reason: 'in_flight' | 'per_second'; retryAfterSeconds: number }
  | { ok: false; reason: 'daily_quota' | 'monthly_cap'; retryAfterSeconds: number; limit: number }
  | { ok: false; reason: 'balance'; balanceEur: string };

export interface UsageDayRow {
  key_id: string;
  day: string;
  requests: number;
  rate_limited: number;
}

/** Failed secrets counted in one fixed window. */
export interface FailureWindow {
  count: number;
  /** Epoch ms when the window ends and counting starts again from 0. */
  endsAt: number;
}

/** Usage counters and the state behind the request gate and the IP limiter (src/limits uses it). */
export interface CounterStore {
  /**
   * Checks every limit and, when all pass, counts the call and takes an in-flight slot, as one
   * atomic step: concurrent admissions from every process and node never pass a limit together.
   */
  admit(key: { id: string; user_id: string }, limits: AdmitLimits, nowMs?: number): Promise<AdmitResult>;
  release(keyId: string, slotId: string): Promise<void>;
  /** Fixed one-minute window per IP; returns seconds to wait, or 0 when admitted. */
  hitIp(ip: string, perMinute: number, nowMs?: number): Promise<number>;
  /**
   * Failed secrets counted under `scope` (what was guessed, from which address) in the fixed window
   * of `windowSeconds` that holds now. A read: checking an address costs no write.
   */
  secretFailures(scope: string, windowSeconds: number, nowMs?: number): Promise<FailureWindow>;
  /**
   * Counts one failed secret, atomically across processes and nodes, and returns the window with it
   * counted. Each call also clears up to two windows that have ended, so the rows of addresses that
   * stopped failing never pile up.
   */
  addSecretFailure(scope: string, windowSeconds: number, nowMs?: number): Promise<FailureWindow>;
  /** Subtracts micro-EUR from the user's balance (initialised to the starting balance); returns the new balance. */
  charge(userId: string, microEur: number, startingBalanceEur: number): Promise<number>;
  /** Adds credit; returns the new balance in micro-EUR. */
  credit(userId: string, microEur: number, startingBalanceEur: number): Promise<number>;
  balanceMicro(userId: string, startingBalanceEur: number): Promise<number>;
  inFlight(keyId: string): Promise<number>;
  /** Rows per key per UTC day, newest day first. */
  usageRows(keyIds: string[]): Promise<UsageDayRow[]>;
  keyMonthRequests(keyId: string, month: string): Promise<number>;
  userMonthRequests(userId: string, month: string): Promise<number>;
}

export interface WaitlistEntry {
  email: string;
  company: string | null;
  use_case: string;
  consent: boolean;
  created_at: string;
  updated_at: string;
}

export interface WaitlistStore {
  /**
   * Adds a sign-up for an email not on the list yet and returns the entry kept: the first sign-up
   * of an email stands, since an anonymous caller who names someone else's email must not change it.
   */
  add(entry: { email: string; company: string | null; use_case: string; consent: boolean }): Promise<WaitlistEntry>;
  get(email: string): Promise<WaitlistEntry | null>;
  count(): Promise<number>;
}

/** One observed outcome of an earlier decision, kept per API key for later calibration. */
export interface TraceRecord {
  key_id: string;
  /** The id of the SystemOneResponse this outcome belongs to. */
  request_id: string;
  /** The question name in that request; "" when the trace covers the whole request. */
  question: string;
  /** The label that turned out true (choice label, score level, or a boolean for noul). */
  outcome: string | number | boolean;
  observed_at: string | null;
  metadata: Record<string, unknown> | null;
  received_at: string;
  /**
   * When the purge removes it: the retention_until of the decision it is about, since calibration
   * joins a trace with that retained decision and has no use for it once the decision is gone.
   */
  expires_at: string;
}

/** What one key's traces may hold at once (ARBITRA_TRACES_MAX, ARBITRA_TRACES_MAX_BYTES). */
export interface TraceQuota {
  traces: number;
  /** Counted as each record's JSON (traceBytes), the same on every backend. */
  bytes: number;
}

export type TracePutResult = { ok: true } | { ok: false; used: TraceQuota; after: TraceQuota };

export interface TraceStore {
  /**
   * Stores one key's records in one transaction, durable on return, when the key's traces stay
   * within the quota afterwards; otherwise stores none and says what the key holds and what it
   * would have held. A record for a (request_id, question) the key already has replaces it and
   * counts only its growth; of records repeating one within the call, the last is kept. Exact under
   * concurrent writers.
   */
  putMany(keyId: string, records: Omit<TraceRecord, 'key_id'>[], quota: TraceQuota): Promise<TracePutResult>;
  list(keyId: string, opts?: { requestId?: string; limit?: number }): Promise<TraceRecord[]>;
  /** Every trace of every key, in key order (for `arbitra calibrate`). */
  all(): AsyncIterable<TraceRecord>;
}

export interface VerificationTokenRecord {
  user_id: string;
  email: string;
  purpose: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export type VerificationUseResult = { status: 'ok'; record: VerificationTokenRecord } | { status: 'not_found' | 'used' | 'expired' };

export interface VerificationTokenStore {
  issue(user: UserRecord, purpose: string, ttlSeconds: number): Promise<{ token: string; record: VerificationTokenRecord }>;
  /** Consumes the token when it belongs to `email` (tokens of other users read as not_found). */
  use(token: string, email: string): Promise<VerificationUseResult>;
}

/**
 * What the store needs of a calibration record; the rest of its content is the decision layer's
 * (src/decision/calibration.ts).
 */
export interface CalibrationRecord {
  version: string;
  model_sha256: string;
  layout: string;
}

/**
 * Fitted calibrations, versioned per model and layout (n counting up from 1); the newest is the one
 * served, and nothing is ever overwritten, so a served version can always be looked up again.
 */
export interface CalibrationStore {
  /** Stores a new version for the record's model and layout; returns the record with its version set. */
  add<T extends CalibrationRecord>(record: Omit<T, 'version'>): Promise<T>;
  /** The newest calibration for this model and layout; null when none was fitted. */
  latest<T extends CalibrationRecord>(modelSha256: string, layout: string): Promise<T | null>;
}

export interface StoreOptions {
  /**
   * Server secret for the stored hashes (ARBITRA_KEY_SECRET); the LMDB backend defaults to the 0600
   * file in the data dir.
   */
  keySecret?: string;
  /** ARBITRA_IDEMPOTENCY_TTL_SECONDS, default 86400. */
  idempotencyTtlSeconds?: number;
  /** Entries per API key (ARBITRA_IDEMPOTENCY_MAX), default 2048. */
  idempotencyMax?: number;
  /** Entries of all keys together (ARBITRA_IDEMPOTENCY_MAX_TOTAL), default IDEMPOTENCY_DEFAULTS.maxTotal. */
  idempotencyMaxTotal?: number;
  /** Active API keys per user (ARBITRA_MAX_KEYS_PER_USER), default DEFAULT_MAX_KEYS_PER_USER. */
  maxKeysPerUser?: number;
  /**
   * Connections one process keeps to a database server (PostgreSQL), default 10. Every process of
   * every node has its own pool (primary, each worker, the purge thread), so nodes × processes ×
   * poolSize must stay under the server's max_connections.
   */
  poolSize?: number;
  /** PostgreSQL: how long a dead node's in-flight slots keep counting (--slot-lease-seconds), default 30. */
  slotLeaseSeconds?: number;
  /** Where a backend reports trouble it recovers from (a dropped database connection); stderr by default. */
  log?: (line: string) => void;
}

export interface PurgeResult {
  retained: number;
  idempotency: number;
  verificationTokens: number;
  traces: number;
  /** Per-address request windows (the limit of routes without a key) that have ended. */
  addressWindows: number;
}

/** The state of the service: one module per job, from one backend. */
export interface Store {
  /** Where the state lives, for messages: the LMDB data dir, or the database URL without its password. */
  readonly location: string;
  readonly users: UserStore;
  readonly keys: KeyStore;
  readonly idempotency: IdempotencyStore;
  readonly retention: RetentionStore;
  readonly counters: CounterStore;
  readonly waitlist: WaitlistStore;
  readonly traces: TraceStore;
  readonly verificationTokens: VerificationTokenStore;
  readonly calibrations: CalibrationStore;
  /**
   * Removes retained requests past retention_until, idempotency entries past their TTL, expired
   * verification tokens and traces past their expires_at, without holding up requests, and on one node at a time where nodes share
   * the state. The purge worker calls it off the main thread.
   */
  purgeExpired(nowMs?: number): Promise<PurgeResult>;
  /**
   * Resolves when the backend answers a trivial request within its bounds; rejects with
   * StoreUnavailableError when it cannot be reached (for /health). LMDB always resolves.
   */
  ping(): Promise<void>;
  /** Waits for pending writes to become durable, then releases the backend's resources. */
  close(): Promise<void>;
}
