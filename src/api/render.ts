// Turns what a handler returned or threw into bytes on the wire, with the headers every response
// carries. The only place where an exception becomes an HTTP status.
import { ApiError, ValidationFailure } from './errors.js';
import { EngineError } from '../engine/types.js';
import { StoreUnavailableError } from '../store/common.js';
import { cutText, previewValue } from '../decision/schema/echo.js';
import { MAX_MESSAGE_CHARS } from '../decision/schema/problems.js';
import type { HttpRequest, HttpResponse, WireResponse } from './route.js';

export const API_VERSION = '2026-10-12';
const JSON_TYPE = 'application/json';

export type ErrorLogger = (line: string) => void;

/**
 * Retry-After for a store outage: a database restart or failover takes seconds, and clients that
 * retry sooner only add load to a server that is coming back.
 */
export const STORE_RETRY_AFTER_SECONDS = 5;
const STORE_LOG_INTERVAL_MS = 10_000;
let lastStoreLog = -Infinity;

/**
 * The body every non-422 error carries. A message or a context member may name what the client
 * sent (a model, an id, a header), so each is cut to a bounded size, as a 422's items are; the
 * members are few and named by the server, so each keeps a bound of its own.
 */
export function errorBody(err: ApiError): { detail: Record<string, unknown> } {
  const context = Object.fromEntries(Object.entries(err.context).map(([name, value]) => [name, previewValue(value, MAX_MESSAGE_CHARS)]));
  return { detail: { error_type: err.code, message: cutText(err.message, MAX_MESSAGE_CHARS), ...context } };
}

function standardHeaders(req: HttpRequest): Record<string, string> {
  return {
    'content-type': JSON_TYPE,
    'x-arbitra-api-version': API_VERSION,
    'x-request-id': req.requestId,
    // The third party's SDK reads request ids (errors included) from this header; a decision
    // overrides it with its response id.
    'x-typesafe-request-id': req.requestId,
  };
}

/** Serialises a handler's response; handler headers win over the standard ones except the version. */
export function renderResponse(req: HttpRequest, res: HttpResponse): WireResponse {
  const headers = standardHeaders(req);
  let body: Buffer;
  if (res.body === undefined) body = Buffer.alloc(0);
  else if (Buffer.isBuffer(res.body)) body = res.body;
  else if (typeof res.body === 'string') body = Buffer.from(res.body, 'utf8');
  else body = Buffer.from(JSON.stringify(res.body), 'utf8');
  for (const [name, value] of Object.entries(res.headers ?? {})) headers[name.toLowerCase()] = value;
  headers['x-arbitra-api-version'] = API_VERSION;
  return { status: res.status, headers, body };
}

/**
 * Renders anything thrown below the transport. Unknown exceptions become a 500 with a generic
 * message; the log line names the route and the error, never the body or credentials.
 */
export function renderError(req: HttpRequest, err: unknown, log: ErrorLogger = defaultLog): WireResponse {
  if (err instanceof ValidationFailure) {
    return renderResponse(req, { status: 422, body: { detail: err.detail } });
  }
  if (err instanceof EngineError && (err.code === 'unavailable' || err.code === 'closed')) {
    // The engine process is restarting or still loading; clients retry, as Retry-After tells them.
    err = new ApiError('service_unavailable', 'The model engine is not available right now; retry shortly.', {}, 2);
  }
  if (err instanceof EngineError && err.code === 'busy') {
    // Not this request's size but the queue it would join: the same request fits later.
    const retry = Number(err.details.retryAfterSeconds) || 1;
    err = new ApiError(
      'too_many_requests',
      `The model engine is too busy to finish this request before its deadline; retry in about ${retry} s (${err.message}).`,
      { reason: 'engine_queue', retry_after_seconds: retry },
      retry,
    );
  }
  if (err instanceof StoreUnavailableError) {
    // The database is down, unreachable or stuck: nothing was acknowledged, so the client may retry.
    // The cause is for the operator, never for the client; one line per interval, not per request.
    if (Date.now() - lastStoreLog >= STORE_LOG_INTERVAL_MS) {
      lastStoreLog = Date.now();
      log(`store unavailable (answering 503) on ${req.method} ${req.path} (request ${req.requestId}): ${err.message}`);
    }
    err = new ApiError('service_unavailable', "The service's database cannot be reached right now; retry shortly.", {}, STORE_RETRY_AFTER_SECONDS);
  }
  if (err instanceof ApiError) {
    const headers: Record<string, string> = {};
    if (err.status === 429 || err.status === 503) {
      const seconds = Math.max(0, err.retryAfterSeconds ?? 1);
      headers['retry-after'] = String(Math.ceil(seconds));
      headers['retry-after-ms'] = String(Math.ceil(seconds * 1000));
    }
    return renderResponse(req, { status: err.status, headers, body: errorBody(err) });
  }
  const what = err instanceof Error ? `${err.name}: ${err.message}\n${err.stack ?? ''}` : String(err);
  log(`internal error on ${req.method} ${req.path} (request ${req.requestId}): ${what}`);
  return renderResponse(req, {
    status: 500,
    body: errorBody(new ApiError('internal_error', 'The server failed to process the request; it has been logged.')),
  });
}

function defaultLog(line: string): void {
  process.stderr.write(`${line}\n`);
}
