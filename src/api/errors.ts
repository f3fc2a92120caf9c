// The one catalogue of error codes. Every non-422 error leaves the service as
//   {"detail": {"error_type": "<code>", "message": "<sentence>", ...context}}
// and every 422 as pydantic's HTTPValidationError {"detail": [ValidationError, ...]}.

export { ValidationFailure, type ValidationErrorItem } from '../decision/schema/problems.js';

export const ERROR_CODES = {
  /** A request that cannot be read at all, e.g. a body whose Content-Encoding does not decode. */
  bad_request: 400,
  authentication_error: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  /** A resource that existed but has lapsed for good, e.g. an expired verification token. */
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  quota_exceeded: 429,
  rate_limited: 429,
  too_many_requests: 429,
  /** Never sent: the client left before its answer; recorded so metrics tell abandonment from failure. */
  client_closed_request: 499,
  internal_error: 500,
  service_unavailable: 503,
  /** A decision that ran past the request deadline; its work in the engine was cancelled. */
  deadline_exceeded: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly context: Record<string, unknown> = {},
    /** Retry hint in seconds; sets Retry-After and retry-after-ms. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_CODES[code];
  }
}
