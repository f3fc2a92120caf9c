// GET /openapi.json: generated once from the assembled routes, on first request.
import { generateOpenApi } from '../openapi.js';
import type { Route } from '../route.js';

/** `routes` is read lazily so the document can include this route and every route assembled later. */
export function openapiRoutes(deps: { routes: () => readonly Route[]; version?: string }): Route[] {
  let document: Buffer | null = null;
  return [
    {
      method: 'GET',
      path: '/openapi.json',
      summary: 'This OpenAPI 3.1 document',
      auth: 'none',
      handler() {
        document ??= Buffer.from(JSON.stringify(generateOpenApi(deps.routes(), { version: deps.version })));
        return { status: 200, body: document };
      },
    },
  ];
}
