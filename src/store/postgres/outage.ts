// Which failures of the database mean "it cannot serve now" (StoreUnavailableError, answered 503
// with Retry-After) rather than a bug (500): the connection refused, lost or timed out, the server
// shutting down or starting, out of connections or disk, a statement cancelled by our bounds. Every
// store module is wrapped here, so the mapping is made in one place and no route words it.
import { StoreUnavailableError } from '../common.js';

/** Node's socket errors for a server that is not there, or no longer there. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/** pg's own words for a connection that ended, never came, or gave no answer within our bounds. */
const CLIENT_MESSAGES = [/^Connection terminated/, /^timeout exceeded when trying to connect/, /^timeout expired$/, /^Query read timeout/, /is not queryable/];

/**
 * SQLSTATEs that end or refuse the session: class 08 (connection exception), 57P01..57P03 (admin or
 * crash shutdown, cannot connect now).
 */
function sessionLost(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03';
}

/**
 * SQLSTATEs after which the session is still usable but the statement could not run now: class 53
 * (out of connections, memory or disk), 57014 (statement_timeout), 55P03 (lock_timeout), 40001 and
 * 40P01 (serialisation failure, deadlock: the server's advice is to retry).
 */
function transient(code: string): boolean {
  return code.startsWith('53') || code === '57014' || code === '55P03' || code === '40001' || code === '40P01';
}

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The connection this error came from is gone or in an unknown state: destroy it, do not roll back on it. */
export function isBrokenConnection(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = codeOf(err);
  if (code !== undefined && (SOCKET_CODES.has(code) || sessionLost(code))) return true;
  return CLIENT_MESSAGES.some((re) => re.test(err.message));
}

/** The database cannot serve this now; retrying later may succeed. */
export function isOutage(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  const code = codeOf(err);
  return isBrokenConnection(err) || (code !== undefined && transient(code));
}

/** The error a caller sees: StoreUnavailableError for an outage (the cause kept), anything else as it was. */
export function asStoreError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError || !isOutage(err)) return err;
  const why = err instanceof Error ? err.message : String(err);
  return new StoreUnavailableError(`the PostgreSQL store is unavailable: ${why}`, { cause: err });
}

/**
 * The module with every promise-returning method's outage errors turned into StoreUnavailableError.
 * Synchronous methods (a pseudonym) and async iterators (traces.all, read by the CLI) pass through.
 */
export function guarded<T extends object>(module: T): T {
  const out = Object.create(module) as Record<string, unknown>;
  for (const [name, value] of Object.entries(module)) {
    if (typeof value !== 'function') continue;
    const fn = value as (...args: unknown[]) => unknown;
    out[name] = (...args: unknown[]) => {
      const result = fn.apply(module, args);
      return result instanceof Promise
        ? result.catch((err: unknown) => {
            throw asStoreError(err);
          })
        : result;
    };
  }
  return out as T;
}
