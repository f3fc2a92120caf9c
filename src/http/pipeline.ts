// The transport-independent part of serving a request: ids, the body gate (413/415), undoing the
// body's Content-Encoding, routing, rendering and metrics. Both adapters drive this, so both
// behave identically.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Cidr } from '../addresses.js';
import { clientOrigin } from '../api/client-address.js';
import { ApiError } from '../api/errors.js';
import { renderError, renderResponse, type ErrorLogger } from '../api/render.js';
import { ACCEPTED_CODINGS, BODY_METHODS, type HttpRequest, type Route, type WireResponse } from '../api/route.js';
import type { HttpMetrics } from '../metrics/http.js';
import { bodyTypeOf, describeBodyTypes, type BodyType } from './body-types.js';
import { BodyDecodingError, MAX_CODINGS, decodeBody, parseContentEncoding } from './content-encoding.js';
import { createRouter } from './router.js';
import type { HttpApp } from './types.js';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_BODY_TYPES: readonly BodyType[] = ['json'];

export interface HttpAppOptions {
  routes: Route[];
  maxBodyBytes?: number;
  /** Peers whose X-Forwarded-For and X-Forwarded-Proto are believed (--trusted-proxies); none by default. */
  trustedProxies?: readonly Cidr[];
  metrics?: HttpMetrics;
  log?: ErrorLogger;
}

export function createHttpApp(opts: HttpAppOptions): HttpApp {
  const router = createRouter(opts.routes);
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const trustedProxies = opts.trustedProxies ?? [];

  function finish(req: HttpRequest, routeLabel: string, wire: WireResponse): WireResponse {
    opts.metrics?.observe(routeLabel, req.method, wire.status, (performance.now() - req.startedAt) / 1000);
    return wire;
  }

  function label(req: HttpRequest): string {
    const m = router.match(req.method, req.path);
    return m.kind === 'found' ? (m.route.name ?? m.route.path) : 'unmatched';
  }

  function renderFailure(req: HttpRequest, err: unknown): WireResponse {
    let wire: WireResponse;
    try {
      wire = renderError(req, err, opts.log);
    } catch (unrenderable) {
      // An error no JSON can hold (a cycle, a BigInt in its context) is still answered: its own
      // rendering failure becomes the generic 500, which carries nothing of the request.
      wire = renderError(req, unrenderable, opts.log);
    }
    // RFC 7694: a 415 names the request codings we take, whichever part of the body it refused.
    if (wire.status === 415) wire.headers['accept-encoding'] = ACCEPTED_CODINGS.join(', ');
    return wire;
  }

  function reject(req: HttpRequest, err: ApiError): WireResponse {
    const wire = renderFailure(req, err);
    // The transport drops the rest of the body (linger.ts) and then lets the connection go: it is
    // never reused after a body it did not read.
    wire.headers.connection = 'close';
    return finish(req, label(req), wire);
  }

  function bodyTypesOf(req: HttpRequest): readonly BodyType[] {
    const m = router.match(req.method, req.path);
    return (m.kind === 'found' ? m.route.bodyTypes : undefined) ?? DEFAULT_BODY_TYPES;
  }

  /** Replaces an encoded body by the decoded one, within the same limit as the wire bytes. */
  async function decodeRequestBody(req: HttpRequest): Promise<void> {
    if (req.body.length === 0 || !BODY_METHODS.has(req.method)) return;
    const encoding = parseContentEncoding(req.headers['content-encoding']);
    if (!encoding.ok) throw encodingError(encoding);
    if (encoding.codings.length === 0) return;
    req.body = await decodeBody(req.body, encoding.codings, maxBodyBytes).catch((err: unknown) => {
      throw err instanceof BodyDecodingError ? decodingError(err, maxBodyBytes) : err;
    });
    // Handlers see the decoded bytes; a header still naming the codings would invite decoding twice.
    delete req.headers['content-encoding'];
  }

  return {
    maxBodyBytes,

    begin({ method, url, headers, ip, signal }) {
      const q = url.indexOf('?');
      // Once, here, so every limiter and the session cookie see the same client.
      const { ip: client, secure, host } = clientOrigin(ip, headers, trustedProxies);
      return {
        method: method.toUpperCase(),
        path: q < 0 ? url : url.slice(0, q),
        query: new URLSearchParams(q < 0 ? '' : url.slice(q + 1)),
        headers,
        body: Buffer.alloc(0),
        params: {},
        ip: client,
        secure,
        host,
        requestId: randomUUID(),
        startedAt: performance.now(),
        signal,
      };
    },

    precheck(req) {
      const declared = req.headers['content-length'];
      const length = declared === undefined ? undefined : Number(declared);
      if (length !== undefined && length > maxBodyBytes) return reject(req, tooLargeError(maxBodyBytes));
      const hasBody = (length !== undefined && length > 0) || req.headers['transfer-encoding'] !== undefined;
      if (!hasBody || !BODY_METHODS.has(req.method)) return null;
      const contentType = req.headers['content-type'];
      const accepted = bodyTypesOf(req);
      const type = bodyTypeOf(contentType);
      if (type === null || !accepted.includes(type)) {
        const message = `Request bodies of ${req.method} ${req.path} must be sent with Content-Type: ${describeBodyTypes(accepted)}.`;
        return reject(req, new ApiError('unsupported_media_type', message, { content_type: contentType ?? null }));
      }
      const encoding = parseContentEncoding(req.headers['content-encoding']);
      return encoding.ok ? null : reject(req, encodingError(encoding));
    },

    tooLarge(req) {
      return reject(req, tooLargeError(maxBodyBytes));
    },

    async handle(req) {
      let routeLabel = 'unmatched';
      try {
        await decodeRequestBody(req);
        const { route, response } = await router.dispatch(req);
        if (route) routeLabel = route.name ?? route.path;
        return finish(req, routeLabel, renderResponse(req, response));
      } catch (err) {
        if (routeLabel === 'unmatched') routeLabel = label(req);
        return finish(req, routeLabel, renderFailure(req, err));
      }
    },
  };
}

function tooLargeError(limit: number): ApiError {
  return new ApiError('payload_too_large', `The request body exceeds the limit of ${limit} bytes.`, { max_body_bytes: limit });
}

function decodingError(err: BodyDecodingError, limit: number): ApiError {
  if (err.reason === 'too_large') {
    return new ApiError('payload_too_large', `The decoded request body exceeds the limit of ${limit} bytes.`, {
      max_body_bytes: limit,
      content_encoding: err.coding,
    });
  }
  return new ApiError('bad_request', `The request body is not valid ${err.coding} data (${err.message}).`, { content_encoding: err.coding });
}

function encodingError(encoding: { unsupported: string } | { tooMany: number }): ApiError {
  const accepted = ACCEPTED_CODINGS.join(', ');
  if ('tooMany' in encoding) {
    return new ApiError('unsupported_media_type', `A request body may carry at most ${MAX_CODINGS} content codings; this one names ${encoding.tooMany}.`, {
      content_encoding_count: encoding.tooMany,
    });
  }
  return new ApiError('unsupported_media_type', `The content coding "${encoding.unsupported}" is not supported; use ${accepted} or identity.`, {
    content_encoding: encoding.unsupported,
  });
}
