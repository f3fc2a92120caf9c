// Method + path → route. Patterns are compiled once; a path that matches some pattern under another
// method is a 405 with Allow, anything else a 404, both as the usual JSON error.
import { ApiError } from '../api/errors.js';
import { renderError } from '../api/render.js';
import type { HttpRequest, HttpResponse, Route } from '../api/route.js';

export type RouteMatch =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'not_found' }
  | { kind: 'method_not_allowed'; allow: string[] };

export interface Router {
  readonly routes: readonly Route[];
  match(method: string, path: string): RouteMatch;
  /** Fills req.params and runs the handler; 404/405 come back as rendered responses. */
  dispatch(req: HttpRequest): Promise<{ route: Route | null; response: HttpResponse }>;
}

interface CompiledRoute {
  route: Route;
  regex: RegExp;
  names: string[];
}

const PARAM = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  let source = '';
  let last = 0;
  for (const m of route.path.matchAll(PARAM)) {
    source += escapeRegex(route.path.slice(last, m.index));
    source += '([^/]+)';
    names.push(m[1]!);
    last = m.index + m[0].length;
  }
  source += escapeRegex(route.path.slice(last));
  return { route, regex: new RegExp(`^${source}$`), names };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function createRouter(routes: Route[]): Router {
  const seen = new Set<string>();
  for (const r of routes) {
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) throw new Error(`route registered twice: ${key}`);
    seen.add(key);
  }
  // Static patterns first so /v1/x/special is not swallowed by /v1/x/{id}.
  const compiled = routes.map(compile).sort((a, b) => a.names.length - b.names.length);

  function match(method: string, path: string): RouteMatch {
    const allow = new Set<string>();
    for (const c of compiled) {
      const m = c.regex.exec(path);
      if (!m) continue;
      if (c.route.method !== method) {
        allow.add(c.route.method);
        continue;
      }
      const params: Record<string, string> = {};
      c.names.forEach((name, i) => {
        params[name] = safeDecode(m[i + 1]!);
      });
      return { kind: 'found', route: c.route, params };
    }
    if (allow.size === 0) return { kind: 'not_found' };
    return { kind: 'method_not_allowed', allow: [...allow].sort() };
  }

  async function dispatch(req: HttpRequest): Promise<{ route: Route | null; response: HttpResponse }> {
    const found = match(req.method, req.path);
    if (found.kind === 'found') {
      req.params = found.params;
      return { route: found.route, response: await found.route.handler(req) };
    }
    if (found.kind === 'not_found') {
      throw new ApiError('not_found', `No route matches ${req.path}.`);
    }
    const err = new ApiError('method_not_allowed', `${req.method} is not allowed on ${req.path}; use ${found.allow.join(', ')}.`, {
      allowed_methods: found.allow,
    });
    const wire = renderError(req, err);
    return {
      route: null,
      response: { status: wire.status, headers: { ...wire.headers, allow: found.allow.join(', ') }, body: wire.body },
    };
  }

  return { routes, match, dispatch };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
