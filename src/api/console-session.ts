// The browser console's session: the operator's console token is exchanged once, at sign-in, for a
// cookie the page's script cannot read (HttpOnly, SameSite=Strict), so the token itself never sits
// in the browser. The cookie is signed, not stored: every HTTP worker and every node that shares the
// console token can check it without a store round trip, and rotating the token ends every session.
// Each cookie has a CSRF token derived from it, which the page must echo in a header on every call:
// a forged cross-site request carries the cookie at most, never the header.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { HttpRequest } from './route.js';

export const SESSION_COOKIE = 'arbitra_console';
export const CSRF_HEADER = 'x-arbitra-csrf';
/** A working day: long enough not to interrupt, short enough that a forgotten tab does not stay signed in for good. */
export const SESSION_SECONDS = 8 * 3600;

export interface ConsoleSession {
  email: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  /** The value the page must send in X-Arbitra-CSRF. */
  csrf: string;
}

export interface IssuedSession extends ConsoleSession {
  /** The Set-Cookie header that hands the session to the browser. */
  setCookie: string;
}

const b64url = (buf: Buffer) => buf.toString('base64url');

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Sessions signed under one console token. */
export class ConsoleSessions {
  private readonly key: Buffer;

  constructor(consoleToken: string) {
    // A key of its own, so nothing signed here can be mistaken for anything else keyed by the token.
    this.key = createHmac('sha256', consoleToken).update('arbitra console session v1').digest();
  }

  private mac(label: string, value: string): Buffer {
    return createHmac('sha256', this.key).update(`${label}\0${value}`).digest();
  }

  /**
   * A new session; `secure` (the request came over TLS, as a trusted proxy says) marks the cookie
   * Secure, which a console served over plain HTTP could never get back.
   */
  issue(email: string, now: number, secure: boolean): IssuedSession {
    const expiresAt = now + SESSION_SECONDS * 1000;
    const payload = b64url(Buffer.from(JSON.stringify({ e: email, x: expiresAt, n: b64url(randomBytes(12)) })));
    const value = `${payload}.${b64url(this.mac('session', payload))}`;
    return { email, expiresAt, csrf: this.csrfOf(value), setCookie: cookieHeader(value, SESSION_SECONDS, secure) };
  }

  /** The session a cookie value holds, or null when it is forged, malformed or expired. */
  read(value: string, now: number): ConsoleSession | null {
    const dot = value.indexOf('.');
    if (dot <= 0) return null;
    const payload = value.slice(0, dot);
    if (!sameBytes(Buffer.from(value.slice(dot + 1), 'base64url'), this.mac('session', payload))) return null;
    let fields: { e?: unknown; x?: unknown };
    try {
      fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { e?: unknown; x?: unknown };
    } catch {
      return null;
    }
    if (typeof fields.e !== 'string' || typeof fields.x !== 'number' || fields.x <= now) return null;
    return { email: fields.e, expiresAt: fields.x, csrf: this.csrfOf(value) };
  }

  private csrfOf(value: string): string {
    return b64url(this.mac('csrf', value));
  }
}

let memo: { token: string; sessions: ConsoleSessions } | null = null;

/** The sessions of this console token, built once per process (the key derivation is per token). */
export function sessionsFor(consoleToken: string): ConsoleSessions {
  if (memo?.token !== consoleToken) memo = { token: consoleToken, sessions: new ConsoleSessions(consoleToken) };
  return memo.sessions;
}

function cookieHeader(value: string, maxAge: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** The Set-Cookie header that ends the session in the browser. */
export function clearedCookie(secure: boolean): string {
  return cookieHeader('', 0, secure);
}

/** The session cookie's value in the request, or undefined. */
export function sessionCookie(req: HttpRequest): string | undefined {
  for (const part of (req.headers['cookie'] ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/**
 * Whether a browser request comes from another site's page: its Origin (sent on every fetch that
 * is not a plain GET) names a host other than the one it was sent to.
 */
export function crossOrigin(req: HttpRequest): boolean {
  const origin = req.headers['origin'];
  if (origin === undefined) return false;
  try {
    // A trusted proxy may rewrite Host; req.host is then the X-Forwarded-Host it passed on.
    return new URL(origin).host !== req.host;
  } catch {
    return true;
  }
}
