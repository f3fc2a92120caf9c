// Contracts of the per-key gate in front of POST /v1/systemone (src/limits/*).
import type { ApiKeyRecord } from '../store/types.js';

export interface Admission {
  /**
   * Ends the in-flight slot taken by admit(); call once, success or failure (a second call does
   * nothing). Awaited before the response goes out, so the client's next call finds the slot free.
   */
  release(): Promise<void>;
}

export interface Charge {
  /** Six decimals, e.g. "0.000123"; present only when billing meters the call. */
  cost_eur: string;
  cost_currency: string;
}

export interface RequestGate {
  /**
   * Admits one decision call for this key, counting it in usage, or throws ApiError:
   * 429 rate_limited (per-second or in-flight), 429 quota_exceeded (daily allowance or monthly cap),
   * 402 payment_required (billing on and the balance cannot cover a call).
   */
  admit(key: ApiKeyRecord): Promise<Admission>;
  /** Meters a finished call; returns the charge when billing is on, else null. */
  meter(key: ApiKeyRecord, usage: { inputTokens: number; outputTokens: number }): Promise<Charge | null>;
}
