// What every backend shares: the formats of API keys and verification tokens, the purposes that
// separate their hashes, the pseudonym of a key, the bound on active keys, and email normalisation.
// A secret minted or hashed by one backend verifies on the other, given the same server secret.
import { randomBase62, type Hasher } from './secret.js';
import { iso } from './clock.js';
import type { TraceRecord, UserRecord, VerificationTokenRecord } from './types.js';

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

export const newUserId = (): string => `usr_${randomBase62(20)}`;
export const newKeyId = (): string => `key_${randomBase62(20)}`;

export const KEY_PREFIX = 'arb_';
const KEY_SECRET_RE = /^arb_[0-9A-Za-z]{43}$/;
export const KEY_HASH_PURPOSE = 'api-key';

/** True when the string has the shape of one of our keys; cheap check before hashing. */
export function looksLikeApiKey(secret: string): boolean {
  return KEY_SECRET_RE.test(secret);
}

/** A new API key: "arb_" + 43 base62 characters (256 bits) and the parts of it that may be shown. */
export function mintApiKey(): { secret: string; prefix: string; masked: string } {
  const secret = KEY_PREFIX + randomBase62(43);
  const prefix = secret.slice(0, KEY_PREFIX.length + 4);
  return { secret, prefix, masked: `${prefix}…${secret.slice(-4)}` };
}

/** The name a key gets when none (or only blanks) is given. */
export function keyName(name: string | undefined): string {
  return name === undefined || name.trim() === '' ? 'Default' : name;
}

/**
 * Active (unrevoked) keys a user may hold when ARBITRA_MAX_KEYS_PER_USER is unset: more than any
 * rotation scheme needs, few enough that a console user cannot grow the store without bound.
 */
export const DEFAULT_MAX_KEYS_PER_USER = 100;

/**
 * The idempotency cache's lifetime and sizes when the store is opened without them; the limits
 * configuration (ARBITRA_IDEMPOTENCY_TTL_SECONDS, ARBITRA_IDEMPOTENCY_MAX, ARBITRA_IDEMPOTENCY_MAX_TOTAL)
 * starts from these too. `max` is per API key. `maxTotal` is 32 keys at their full cap, so no one
 * key comes near it, and past it only the oldest entries of all go; at a decision response's usual
 * 1 to 4 KB it bounds the cache at a few hundred MB.
 */
export const IDEMPOTENCY_DEFAULTS = { ttlSeconds: 86400, max: 2048, maxTotal: 65536 } as const;

/** A trace's size as counted against its key's quota: its JSON, whichever backend stores it. */
export function traceBytes(record: object): number {
  return Buffer.byteLength(JSON.stringify(record));
}

/** A key's records as stored, one per (request_id, question): of records repeating one, the last. */
export function latestTraces(keyId: string, records: readonly Omit<TraceRecord, 'key_id'>[]): TraceRecord[] {
  const byName = new Map<string, TraceRecord>();
  for (const r of records) byName.set(JSON.stringify([r.request_id, r.question]), { ...r, key_id: keyId });
  return [...byName.values()];
}

/**
 * Traces stored before they had an expiry, and whose decision is no longer retained, are kept this
 * long after the upgrade that gives them one (the default retention period), rather than removed
 * by the first purge after an upgrade.
 */
export const TRACE_UPGRADE_GRACE_MS = 30 * 86_400_000;

/** A create refused because the user already holds `limit` active keys. */
export class KeyLimitError extends Error {
  override readonly name = 'KeyLimitError';
  constructor(readonly limit: number) {
    super(`the user already has ${limit} active API keys`);
  }
}

/**
 * The backend cannot be reached, or did not answer within its bounds (a database server that is
 * down, restarting, partitioned away or stuck on a lock). Nothing was acknowledged: a write that
 * fails this way was rolled back or never reached the server, so the caller may retry it. The HTTP
 * layer answers 503 service_unavailable with Retry-After.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export const TOKEN_HASH_PURPOSE = 'verification-token';
const TOKEN_RE = /^avt_[0-9A-Za-z]{43}$/;

function mintVerificationToken(): string {
  return `avt_${randomBase62(43)}`;
}

/** A new token and the record every backend keeps of it (under the token's hash, never the token). */
export function newVerificationToken(
  user: Pick<UserRecord, 'id' | 'email'>,
  purpose: string,
  ttlSeconds: number,
  now = Date.now(),
): { token: string; record: VerificationTokenRecord } {
  return {
    token: mintVerificationToken(),
    record: {
      user_id: user.id,
      email: user.email,
      purpose,
      created_at: iso(now),
      expires_at: iso(now + ttlSeconds * 1000),
      used_at: null,
    },
  };
}

export function looksLikeVerificationToken(token: string): boolean {
  return TOKEN_RE.test(token);
}

/** The version of the n-th calibration of a model and layout: it names both, and counts up. */
export function calibrationVersion(record: { model_sha256: string; layout: string }, n: number): string {
  return `${record.layout}.${record.model_sha256.slice(0, 8)}.${n}`;
}

/** A stable pseudonym for the key: the same on every call, worker and node sharing the secret. */
export function pseudonymOf(hash: Hasher, keyId: string): string {
  return `psn_${hash('pseudonym', keyId).slice(0, 32)}`;
}
