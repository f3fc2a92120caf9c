// Contracts of the LMDB-backed stores (src/store/*). Every write that acknowledges a client is
// awaited until LMDB has committed it to disk before the response goes out.

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

export type IdempotencyLookup =
  | { status: 'miss' }
  | { status: 'hit'; response: Buffer; responseStatus: number }
  | { status: 'conflict' };

export interface IdempotencyStore {
  /** bodyHash is the sha256 of the canonical JSON body. Entries are scoped per API key. */
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
  /** The same read without a promise, for scans over many records. */
  getSync(keyId: string, id: string): RetainedRecord | null;
  /** true when a record of this key was removed; false when none (or another key's). */
  delete(keyId: string, id: string): Promise<boolean>;
  /** A stable pseudonym for the key, the same on every call and worker. */
  pseudonym(keyId: string): string;
}

// --- Records added with the console, waitlist, traces and verification tokens (issue 3). ---

export interface WaitlistEntry {
  email: string;
  company: string | null;
  use_case: string;
  consent: boolean;
  created_at: string;
  updated_at: string;
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
}

export interface VerificationTokenRecord {
  user_id: string;
  email: string;
  purpose: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export type VerificationUseResult =
  | { status: 'ok'; record: VerificationTokenRecord }
  | { status: 'not_found' | 'used' | 'expired' };
