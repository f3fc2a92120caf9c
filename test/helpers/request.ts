// A request as a handler sees it, for testing auth, routes and renderers without a server.
import type { HttpRequest } from '../../src/api/route.js';

export function fakeRequest(headers: Record<string, string> = {}, more: Partial<HttpRequest> = {}): HttpRequest {
  return {
    method: 'GET',
    path: '/',
    query: new URLSearchParams(),
    headers,
    body: Buffer.alloc(0),
    params: {},
    ip: '127.0.0.1',
    secure: false,
    host: headers['host'] ?? '',
    requestId: 'r',
    startedAt: 0,
    ...more,
  };
}
