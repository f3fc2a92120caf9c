// Proof of the shared engine secret (ARBITRA_ENGINE_SECRET) on every call to an engine over TCP,
// and on every reply. The secret never crosses the wire.
//
// A call carries, in its metadata, the time, a fresh nonce, the name of the engine it is meant for,
// the SHA-256 of its message (the serialized bytes, exactly as sent) and an HMAC of all of them and
// of the method, labelled as the API node's. The engine checks that proof from the metadata alone,
// before it reads the message (guard.ts), then hashes the message it reads against it. So a call
// recorded on the network cannot be sent again (the engine remembers the nonces of the last minutes
// and refuses older times), nor with another message, nor to another engine that holds the same
// secret, nor to another method.
//
// The reply carries, in its trailers, an HMAC labelled as the engine's over the call's nonce, the
// engine's name, the status code, the SHA-256 of the reply message (none on an error) and the error
// trailer: the caller takes a score, or an engine's refusal, only when that proof holds. One side's
// proof reflected back proves nothing, since each is labelled with its speaker.
//
// The engine's name is a random one it draws when it starts (`newEngineName`), not its address: the
// address an engine listens on (0.0.0.0:7000) is not the one API nodes dial (10.0.0.5:7000, a DNS
// name, a NAT), so neither side could be sure of the other's spelling; and a name drawn at start
// changes when the engine restarts, so a call recorded before a restart is refused after it even
// though the engine's memory of used nonces started empty. An API node learns the name from the
// engine: its first call names no engine, and the engine, once that call's proof holds, refuses it
// and says its name (`arbitra-engine` in the trailers); the call is then made again for that name.
// The name is not a secret and needs no proof: a node fooled into naming another engine of the same
// secret gets that engine's answer, as it would if its connection were routed there.
//
// Without TLS the messages themselves are readable on the network: the proofs make them
// unforgeable, not private.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Metadata } from '@grpc/grpc-js';

export const NONCE_BYTES = 32;
/** A secret long enough that guessing it online is hopeless. */
export const MIN_SECRET_LENGTH = 16;
/** Calls whose time is further off than this are refused; the nodes' clocks must agree this well (NTP). */
export const PROOF_WINDOW_MS = 120_000;

const TIME = 'arbitra-time';
const NONCE = 'arbitra-nonce';
const ENGINE = 'arbitra-engine';
const BODY = 'arbitra-body';
const PROOF = 'arbitra-proof';
/** The trailer in which an engine says its name to a caller that named another. */
export const NAME_TRAILER = ENGINE;

export type Speaker = 'api' | 'engine';

export function newNonce(): string {
  return randomBytes(NONCE_BYTES).toString('base64');
}

/** An engine's name for this start of it. */
export function newEngineName(): string {
  return randomBytes(12).toString('base64url');
}

/** The SHA-256 of a message's bytes, as the proofs cover it; '' for no message. */
export function bodyHash(bytes: Uint8Array | null): string {
  return bytes === null ? '' : createHash('sha256').update(bytes).digest('base64');
}

// v2: the fields below. A node of the previous protocol (time, nonce and method only) proves
// nothing under this label, so a mixed cluster fails loudly instead of half-checking.
const LABEL = 'arbitra-engine-v2';

export function proofOf(secret: string, speaker: Speaker, fields: readonly string[]): string {
  return createHmac('sha256', secret)
    .update([LABEL, speaker, ...fields].join('\u0000'))
    .digest('base64');
}

/** True when `proof` is `speaker`'s proof of `fields` under `secret`; compared in constant time. */
export function verifyProof(secret: string, speaker: Speaker, fields: readonly string[], proof: unknown): boolean {
  if (typeof proof !== 'string') return false;
  const want = Buffer.from(proofOf(secret, speaker, fields), 'base64');
  const got = Buffer.from(proof, 'base64');
  return got.length === want.length && timingSafeEqual(got, want);
}

/** What an API node's call is: its gRPC path, the engine it is meant for ('' when not yet known) and its message. */
export interface CallFacts {
  method: string;
  engine: string;
  body: Uint8Array;
}

const callFields = (time: string, nonce: string, method: string, engine: string, body: string): string[] => [time, nonce, method, engine, body];

/** Signs a call from an API node; returns the nonce the engine's reply must prove. */
export function signCall(metadata: Metadata, secret: string, call: CallFacts, now = Date.now()): string {
  const nonce = newNonce();
  const time = String(now);
  const body = bodyHash(call.body);
  metadata.set(TIME, time);
  metadata.set(NONCE, nonce);
  metadata.set(ENGINE, call.engine);
  metadata.set(BODY, body);
  metadata.set(PROOF, proofOf(secret, 'api', callFields(time, nonce, call.method, call.engine, body)));
  return nonce;
}

/** What an engine's reply is: the call it answers, the engine, its status and its bytes. */
export interface ReplyFacts {
  nonce: string;
  engine: string;
  code: number;
  /** bodyHash() of the reply message; '' when there is none (an error). */
  body: string;
  /** The error trailer (codec.ts's ERROR_TRAILER), '' when none. */
  error: string;
}

const replyFields = (r: ReplyFacts): string[] => [r.nonce, r.engine, String(r.code), r.body, r.error];

/** The engine's proof of its reply, for the reply's trailers. */
export function signReply(trailers: Metadata, secret: string, reply: ReplyFacts): void {
  trailers.set(PROOF, proofOf(secret, 'engine', replyFields(reply)));
}

/** Whether the trailers prove that the engine sent this reply to this call. */
export function replyProved(trailers: Metadata | undefined, secret: string, reply: ReplyFacts): boolean {
  return trailers !== undefined && verifyProof(secret, 'engine', replyFields(reply), trailers.get(PROOF)[0]);
}

const first = (metadata: Metadata, key: string): string | null => {
  const v = metadata.get(key)[0];
  return typeof v === 'string' ? v : null;
};

/**
 * Why a call is refused. `failed`: its proof is wrong, which counts against its address (a caller
 * guessing); a call that proves the secret but names another engine is not: it is told `engine`,
 * this engine's name, and may call again.
 */
export type Refusal = { refused: string; failed: boolean; engine?: string };
/** An admitted call: the nonce its reply must prove and the hash its message must have. */
export type Admission = { nonce: string; body: string };

/** The engine's side: each call's proof checked from its metadata, and its nonce remembered so it cannot be used again. */
export class CallVerifier {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly secret: string,
    /** This engine's name (newEngineName). */
    readonly engine: string,
    private readonly windowMs = PROOF_WINDOW_MS,
  ) {}

  check(metadata: Metadata, method: string, now = Date.now()): Admission | Refusal {
    const time = first(metadata, TIME);
    const nonce = first(metadata, NONCE) ?? '';
    const engine = first(metadata, ENGINE);
    const body = first(metadata, BODY);
    if (!time || nonce.length < 16) return { refused: 'not an Arbitra API node', failed: true };
    if (engine === null || !body) {
      return { refused: 'its proof covers no message: an API node older than this engine (upgrade API nodes and engines together)', failed: true };
    }
    if (!verifyProof(this.secret, 'api', callFields(time, nonce, method, engine, body), metadata.get(PROOF)[0])) {
      return { refused: 'wrong engine secret', failed: true };
    }
    if (Math.abs(now - Number(time)) > this.windowMs) return { refused: `its clock is more than ${this.windowMs / 1000} s off this engine's`, failed: true };
    if (engine !== this.engine) return { refused: 'the call is meant for another engine', failed: false, engine: this.engine };
    for (const [n, at] of this.seen) {
      if (now - at <= this.windowMs) break;
      this.seen.delete(n);
    }
    if (this.seen.has(nonce)) return { refused: 'a proof already used', failed: true };
    this.seen.set(nonce, now);
    return { nonce, body };
  }
}
