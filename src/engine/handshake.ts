// Mutual proof of the shared engine secret (ARBITRA_ENGINE_SECRET) when an API node connects to an
// engine over TCP. The secret never crosses the wire: each side sends a fresh nonce and the other
// answers with an HMAC of it, under a label saying which side speaks, so a proof recorded on one
// connection, or reflected back from the other side, proves nothing. Without TLS the frames that
// follow are readable on the network; the proof only keeps strangers from scoring or from posing
// as an engine.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const NONCE_BYTES = 32;

export type Speaker = 'api' | 'engine';

/** Frames of the handshake, before any scoring frame. */
export type HandshakeFrame =
  | { t: 'challenge'; nonce: string }
  | { t: 'hello'; nonce: string; proof: string }
  | { t: 'welcome'; proof: string; info: unknown }
  | { t: 'denied'; reason: string };

export function newNonce(): string {
  return randomBytes(NONCE_BYTES).toString('base64');
}

export function proofOf(secret: string, speaker: Speaker, nonce: string): string {
  return createHmac('sha256', secret).update(`arbitra-engine\u0000${speaker}\u0000${nonce}`).digest('base64');
}

/** True when `proof` is `speaker`'s answer to `nonce` under `secret`; compared in constant time. */
export function verifyProof(secret: string, speaker: Speaker, nonce: string, proof: unknown): boolean {
  if (typeof proof !== 'string') return false;
  const want = Buffer.from(proofOf(secret, speaker, nonce), 'base64');
  const got = Buffer.from(proof, 'base64');
  return got.length === want.length && timingSafeEqual(got, want);
}

/** A secret long enough that guessing it online is hopeless. */
export const MIN_SECRET_LENGTH = 16;
