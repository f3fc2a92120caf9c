// Proof of the shared engine secret (ARBITRA_ENGINE_SECRET) on every call to an engine over TCP.
// The secret never crosses the wire. The API node sends the time, a fresh nonce and an HMAC of both
// and of the method it calls, labelled as the node's; the engine answers, in its response headers,
// with an HMAC of that nonce labelled as its own. So neither side can be impersonated without the
// secret, a proof recorded on one call is refused on another (the engine remembers the nonces of
// the last minutes and refuses older times), and one side's proof reflected back proves nothing.
// Without TLS the messages themselves are readable on the network.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Metadata } from '@grpc/grpc-js';

export const NONCE_BYTES = 32;
/** A secret long enough that guessing it online is hopeless. */
export const MIN_SECRET_LENGTH = 16;
/** Calls whose time is further off than this are refused; the nodes' clocks must agree this well (NTP). */
export const PROOF_WINDOW_MS = 120_000;

const TIME = 'arbitra-time';
const NONCE = 'arbitra-nonce';
const PROOF = 'arbitra-proof';

export type Speaker = 'api' | 'engine';

export function newNonce(): string {
  return randomBytes(NONCE_BYTES).toString('base64');
}

export function proofOf(secret: string, speaker: Speaker, text: string): string {
  return createHmac('sha256', secret).update(`arbitra-engine\u0000${speaker}\u0000${text}`).digest('base64');
}

/** True when `proof` is `speaker`'s proof of `text` under `secret`; compared in constant time. */
export function verifyProof(secret: string, speaker: Speaker, text: string, proof: unknown): boolean {
  if (typeof proof !== 'string') return false;
  const want = Buffer.from(proofOf(secret, speaker, text), 'base64');
  const got = Buffer.from(proof, 'base64');
  return got.length === want.length && timingSafeEqual(got, want);
}

const callText = (time: string, nonce: string, method: string): string => `${time}\u0000${nonce}\u0000${method}`;

/** Signs a call to `method` (its gRPC path) from an API node; returns the nonce the engine must answer. */
export function signCall(metadata: Metadata, secret: string, method: string, now = Date.now()): string {
  const nonce = newNonce();
  const time = String(now);
  metadata.set(TIME, time);
  metadata.set(NONCE, nonce);
  metadata.set(PROOF, proofOf(secret, 'api', callText(time, nonce, method)));
  return nonce;
}

/** The engine's answer to a call's nonce, for its response headers. */
export function answerCall(metadata: Metadata, secret: string, nonce: string): void {
  metadata.set(PROOF, proofOf(secret, 'engine', nonce));
}

/** Whether the response headers prove the engine holds the secret. */
export function engineProved(metadata: Metadata, secret: string, nonce: string): boolean {
  return verifyProof(secret, 'engine', nonce, metadata.get(PROOF)[0]);
}

const first = (metadata: Metadata, key: string): string => {
  const v = metadata.get(key)[0];
  return typeof v === 'string' ? v : '';
};

/** The engine's side: each call's proof checked, and its nonce remembered so it cannot be used again. */
export class CallVerifier {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly secret: string,
    private readonly windowMs = PROOF_WINDOW_MS,
  ) {}

  /** The nonce to answer, or why the call is refused. */
  check(metadata: Metadata, method: string, now = Date.now()): { nonce: string } | { refused: string } {
    const time = first(metadata, TIME);
    const nonce = first(metadata, NONCE);
    if (!time || nonce.length < 16) return { refused: 'not an Arbitra API node' };
    if (!verifyProof(this.secret, 'api', callText(time, nonce, method), metadata.get(PROOF)[0])) return { refused: 'wrong engine secret' };
    if (Math.abs(now - Number(time)) > this.windowMs) return { refused: `its clock is more than ${this.windowMs / 1000} s off this engine's` };
    for (const [n, at] of this.seen) {
      if (now - at <= this.windowMs) break;
      this.seen.delete(n);
    }
    if (this.seen.has(nonce)) return { refused: 'a proof already used' };
    this.seen.set(nonce, now);
    return { nonce };
  }
}
