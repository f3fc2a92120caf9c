// The transport-neutral request and response that every route handler sees; the uWebSockets.js
// and node:http adapters both translate to and from these, so routes never know which one runs.

export interface HttpRequest {
  method: string;
  /** Path without the query string, e.g. /v1/console/api-keys/abc */
  path: string;
  query: URLSearchParams;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** Raw body bytes (already bounded by the body size limit). */
  body: Buffer;
  /** Path parameters filled by the router, e.g. { key_id: "..." } for /v1/console/api-keys/{key_id} */
  params: Record<string, string>;
  /** Remote address of the peer. */
  ip: string;
  /** The id sent back as x-request-id. */
  requestId: string;
  /** Monotonic start time (performance.now()) for latency metrics. */
  startedAt: number;
}

export interface HttpResponse {
  status: number;
  headers?: Record<string, string>;
  /** An object is serialised as JSON; a string or Buffer is sent as is (set content-type yourself). */
  body?: unknown;
}

export type RouteHandler = (req: HttpRequest) => Promise<HttpResponse> | HttpResponse;

export interface Route {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';
  /** Path pattern with {name} parameters, e.g. /v1/retention/{request_id} */
  path: string;
  /** Name used as the `route` label in metrics; defaults to the pattern. */
  name?: string;
  handler: RouteHandler;
}
