import type { TSchema } from '@sinclair/typebox';

// The transport-neutral request and response that every route handler sees; the uWebSockets.js
// and node:http adapters both translate to and from these, so routes never know which one runs.

export interface HttpRequest {
  method: string;
  /** Path without the query string, e.g. /v1/console/api-keys/abc */
  path: string;
  query: URLSearchParams;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** Body bytes with any Content-Encoding undone (bounded by the body size limit, wire and decoded). */
  body: Buffer;
  /** Path parameters filled by the router, e.g. { key_id: "..." } for /v1/console/api-keys/{key_id} */
  params: Record<string, string>;
  /** Remote address of the peer. */
  ip: string;
  /** The id sent back as x-request-id. */
  requestId: string;
  /** Monotonic start time (performance.now()) for latency metrics. */
  startedAt: number;
  /** Aborted when the client goes away before its response is sent, so work done for it can stop. */
  signal?: AbortSignal;
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
  /** One-line description for the OpenAPI document. */
  summary?: string;
  /** Longer notes for the OpenAPI document, e.g. this server's limits on the route. */
  description?: string;
  /** Media type of the success body when it is not JSON (e.g. Prometheus text). */
  responseType?: string;
  /** TypeBox schemas the OpenAPI document is generated from (validation stays in the handler). */
  schemas?: { body?: TSchema; response?: TSchema; params?: TSchema };
  /** Who may call it, for the OpenAPI security requirements; defaults to 'none'. */
  auth?: 'api_key' | 'console' | 'none';
  /** Error statuses the route may answer beyond those implied by auth, body and path (e.g. [402, 409, 429]). */
  errorStatuses?: number[];
  /** OpenAPI tag grouping the route; defaults to the first path segment after /v1. */
  tag?: string;
  /** Request bodies the route takes (Content-Type); defaults to JSON only. */
  bodyTypes?: readonly ('json' | 'multipart')[];
}

/** A response ready for the wire: status, every header, and the encoded body. */
export interface WireResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** What a transport needs from the application: the pipeline below the socket. */
export interface HttpApp {
  /** Bodies larger than this are refused with 413 before they are buffered. */
  maxBodyBytes: number;
  /** A fresh request: id, start time, params empty, body empty until the transport fills it. */
  begin(init: { method: string; url: string; headers: Record<string, string>; ip: string; signal: AbortSignal }): HttpRequest;
  /** Checks the declared body before any byte is read; a WireResponse means refuse the request with it. */
  precheck(req: HttpRequest): WireResponse | null;
  /** Renders a 413 for a body that outgrew the limit while streaming. */
  tooLarge(req: HttpRequest): WireResponse;
  /** Routes, runs and renders; never throws. */
  handle(req: HttpRequest): Promise<WireResponse>;
}

export type HttpImplementation = 'uws' | 'node';
