// The contract between the routes and whatever carries requests to them: the request and response
// every handler sees, a route's declaration, and what every request may carry. The uWebSockets.js
// and node:http adapters both translate to and from these, so routes never know which one runs.
import type { TSchema } from '@sinclair/typebox';

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
  /**
   * The client's address: the peer's, or behind a trusted proxy (--trusted-proxies) the one it
   * forwarded for (src/api/client-address.ts), in canonical text.
   */
  ip: string;
  /** Whether the client reached us over TLS, as a trusted proxy's X-Forwarded-Proto says; never from the client itself. */
  secure: boolean;
  /** The host the client addressed (Host, or a trusted proxy's X-Forwarded-Host); never a forwarded header from the client itself. */
  host: string;
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

/** The transports a request may arrive over. */
export type HttpImplementation = 'uws' | 'node';

/** Methods whose request body is gated by type (415) and decoded (400); other methods' bodies are never read. */
export const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export type ContentCoding = 'zstd' | 'gzip' | 'deflate' | 'br';

/** The Content-Encodings a request body may use, in the order Accept-Encoding advertises them. */
export const ACCEPTED_CODINGS: readonly ContentCoding[] = ['zstd', 'gzip', 'deflate', 'br'];
