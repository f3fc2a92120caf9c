// Who is calling: API keys (Authorization: Bearer) for the API routes, the operator's console
// token plus a user email for /v1/console/*. The two never stand in for each other.
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError, ValidationFailure } from './errors.js';
import type { HttpRequest } from './route.js';
import { CSRF_HEADER, crossOrigin, sessionCookie, sessionsFor, type ConsoleSession } from './console-session.js';
import type { SecretThrottle } from './secret-throttle.js';
import type { ApiKeyRecord, KeyStore } from '../store/types.js';

const BEARER_RE = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The key of an API request; a wrong one counts against its address (`throttle`). */
export async function authenticate(req: HttpRequest, keys: KeyStore, throttle: SecretThrottle): Promise<ApiKeyRecord> {
  const header = req.headers['authorization'];
  if (header === undefined || header.trim() === '') {
    throw new ApiError('authentication_error', 'Missing API key: send the header "Authorization: Bearer <API_KEY>".');
  }
  const match = BEARER_RE.exec(header.trim());
  if (!match) {
    throw new ApiError('authentication_error', 'Malformed Authorization header: expected "Bearer <API_KEY>".');
  }
  return throttle.check(
    req,
    'api_key',
    () => keys.verify(match[1]!),
    () => new ApiError('authentication_error', 'Invalid API key: it is unknown or has been revoked.'),
  );
}

export interface ConsoleIdentity {
  /** The console user's email, lower-cased. */
  email: string;
}

const EMAIL_RE = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]{2,}$/;

export function isValidEmail(value: string): boolean {
  return value.length <= 254 && EMAIL_RE.test(value);
}

export function sameSecret(given: string, expected: string): boolean {
  // Digests first, so the comparison takes the same time whatever the lengths.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * The console caller: X-Arbitra-Console-Token (or X-TypeSafe-Console-Token) must equal the
 * operator's ARBITRA_CONSOLE_TOKEN, and X-Arbitra-User-Email (or X-TypeSafe-User-Email) names the
 * user; or, from the browser console, a signed-in session cookie with its CSRF header. With no
 * console token configured the console is closed (503), never open. A wrong token counts against
 * its address (`throttle`); the cookie and its CSRF token are MACs under a key derived from the
 * console token, which no number of guesses reaches, so they are not counted.
 */
export async function consoleIdentity(req: HttpRequest, consoleToken: string | undefined, throttle: SecretThrottle): Promise<ConsoleIdentity> {
  if (consoleToken === undefined || consoleToken === '') throw consoleClosed();
  const given = req.headers['x-arbitra-console-token'] ?? req.headers['x-typesafe-console-token'];
  if ((given === undefined || given === '') && sessionCookie(req) !== undefined) return sessionIdentity(req, consoleToken);
  if (given === undefined || given === '') {
    throw new ApiError(
      'authentication_error',
      'Missing console token: console routes need the X-Arbitra-Console-Token header (an API key does not open them).',
    );
  }
  await throttle.check(
    req,
    'console',
    () => sameSecret(given, consoleToken) || null,
    () => new ApiError('authentication_error', 'Invalid console token.'),
  );
  const headerName = req.headers['x-arbitra-user-email'] !== undefined ? 'x-arbitra-user-email' : 'x-typesafe-user-email';
  const raw = req.headers[headerName];
  if (raw === undefined || raw.trim() === '') {
    throw new ValidationFailure([{ type: 'missing', loc: ['header', 'x-arbitra-user-email'], msg: 'Field required', input: null }]);
  }
  const email = raw.trim().toLowerCase();
  if (!isValidEmail(email)) {
    throw new ValidationFailure([
      {
        type: 'value_error',
        loc: ['header', headerName],
        msg: 'value is not a valid email address',
        input: raw,
        ctx: { reason: 'expected an address of the form name@domain.tld' },
      },
    ]);
  }
  return { email };
}

/** The 503 of a console whose operator has set no console token, saying how to open it. */
export function consoleClosed(): ApiError {
  return new ApiError(
    'service_unavailable',
    'Console routes are disabled: the operator has not configured ARBITRA_CONSOLE_TOKEN. Set it (at least 16 characters) in the environment of arbitra serve and restart it.',
  );
}

/** The signed-in browser session of this request, or a 401 saying to sign in again. */
export function consoleSession(req: HttpRequest, consoleToken: string): ConsoleSession {
  const value = sessionCookie(req);
  const session = value === undefined ? null : sessionsFor(consoleToken).read(value, Date.now());
  if (!session) throw new ApiError('authentication_error', 'Not signed in to the console, or the session has ended: sign in again at /console.');
  return session;
}

/**
 * A browser session standing in for the console headers. It counts only with its CSRF header and
 * from this site's own pages, so another site cannot borrow the cookie.
 */
function sessionIdentity(req: HttpRequest, consoleToken: string): ConsoleIdentity {
  const session = consoleSession(req, consoleToken);
  if (crossOrigin(req)) throw new ApiError('forbidden', 'Console requests from another site are refused.');
  if (!sameSecret(req.headers[CSRF_HEADER] ?? '', session.csrf)) {
    throw new ApiError('forbidden', `Missing or wrong ${CSRF_HEADER} header: the console session's requests must carry the CSRF token given at sign-in.`);
  }
  return { email: session.email };
}
