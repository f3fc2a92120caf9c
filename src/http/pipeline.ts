// The transport-independent part of serving a request: ids, the body gate (413/415), routing,
// rendering and metrics. Both adapters drive this, so both behave identically.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { ApiError } from '../api/errors.js';
import { renderError, renderResponse, type ErrorLogger } from '../api/render.js';
import type { HttpMetrics } from '../metrics/http.js';
import { createRouter } from './router.js';
import type { HttpApp, HttpRequest, Route, WireResponse } from './types.js';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface HttpAppOptions {
  routes: Route[];
  maxBodyBytes?: number;
  metrics?: HttpMetrics;
  log?: ErrorLogger;
}

export function createHttpApp(opts: HttpAppOptions): HttpApp {
  const router = createRouter(opts.routes);
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;

  function finish(req: HttpRequest, routeLabel: string, wire: WireResponse): WireResponse {
    opts.metrics?.observe(routeLabel, req.method, wire.status, (performance.now() - req.startedAt) / 1000);
    return wire;
  }

  function label(req: HttpRequest): string {
    const m = router.match(req.method, req.path);
    return m.kind === 'found' ? (m.route.name ?? m.route.path) : 'unmatched';
  }

  function reject(req: HttpRequest, err: ApiError): WireResponse {
    const wire = renderError(req, err, opts.log);
    // The rest of the body is never read, so the connection cannot be reused.
    wire.headers.connection = 'close';
    return finish(req, label(req), wire);
  }

  return {
    maxBodyBytes,

    begin({ method, url, headers, ip }) {
      const q = url.indexOf('?');
      return {
        method: method.toUpperCase(),
        path: q < 0 ? url : url.slice(0, q),
        query: new URLSearchParams(q < 0 ? '' : url.slice(q + 1)),
        headers,
        body: Buffer.alloc(0),
        params: {},
        ip: ip.startsWith('::ffff:') ? ip.slice(7) : ip,
        requestId: randomUUID(),
        startedAt: performance.now(),
      };
    },

    precheck(req) {
      const declared = req.headers['content-length'];
      const length = declared === undefined ? undefined : Number(declared);
      if (length !== undefined && length > maxBodyBytes) return reject(req, tooLargeError(maxBodyBytes));
      const hasBody = (length !== undefined && length > 0) || req.headers['transfer-encoding'] !== undefined;
      if (hasBody && BODY_METHODS.has(req.method) && !isJson(req.headers['content-type'])) {
        return reject(
          req,
          new ApiError('unsupported_media_type', 'Request bodies must be JSON sent with Content-Type: application/json.', {
            content_type: req.headers['content-type'] ?? null,
          }),
        );
      }
      return null;
    },

    tooLarge(req) {
      return reject(req, tooLargeError(maxBodyBytes));
    },

    async handle(req) {
      let routeLabel = 'unmatched';
      try {
        const { route, response } = await router.dispatch(req);
        if (route) routeLabel = route.name ?? route.path;
        return finish(req, routeLabel, renderResponse(req, response));
      } catch (err) {
        if (routeLabel === 'unmatched') routeLabel = label(req);
        return finish(req, routeLabel, renderError(req, err, opts.log));
      }
    },
  };
}

function tooLargeError(limit: number): ApiError {
  return new ApiError('payload_too_large', `The request body exceeds the limit of ${limit} bytes.`, { max_body_bytes: limit });
}

function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  return contentType.split(';')[0]!.trim().toLowerCase() === 'application/json';
}
