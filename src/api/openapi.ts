// OpenAPI 3.1 from the routes themselves: their TypeBox schemas are JSON Schema already, so the
// document cannot drift from what is validated. Error responses come from the one error catalogue.
import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_CODES } from './errors.js';
import { API_VERSION } from './render.js';
import { ACCEPTED_CODINGS, BODY_METHODS, type Route } from './route.js';
import { ALSO_STATUSES } from './schemas/common.js';

const ValidationError = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  msg: Type.String(),
  type: Type.String(),
  input: Type.Optional(Type.Unknown()),
  ctx: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
const HTTPValidationError = Type.Object({ detail: Type.Optional(Type.Array(ValidationError)) });
const ErrorResponse = Type.Object(
  {
    detail: Type.Object(
      {
        error_type: Type.Union(Object.keys(ERROR_CODES).map((c) => Type.Literal(c))),
        message: Type.String(),
      },
      { additionalProperties: true, description: 'error_type and message, plus context members of the error (e.g. topup_url and payg_url on 402)' },
    ),
  },
  { description: 'Every error other than 422' },
);

type Json = Record<string, unknown>;

/** A plain JSON copy of a schema: TypeBox's symbol keys dropped, $id-named schemas moved to components. */
function toJson(schema: TSchema, components: Json): Json {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$id') continue;
      out[key] = key === '$ref' && typeof value === 'string' && !value.startsWith('#') ? `#/components/schemas/${value}` : walk(value);
    }
    const id = (node as Json).$id;
    if (typeof id === 'string') {
      components[id] = out;
      return { $ref: `#/components/schemas/${id}` };
    }
    return out;
  };
  return walk(schema) as Json;
}

// The key and the console's user live in the store: with PostgreSQL unreachable, both are a 503.
// An address that sent too many wrong secrets is a 429 (src/api/secret-throttle.ts).
const ERROR_STATUSES_BY_AUTH: Record<string, number[]> = {
  api_key: [401, 429, 503],
  console: [401, 429, 503],
  none: [],
};

/** Every error status a route can answer, from what the pipeline does before and around it. */
function errorStatusesOf(route: Route): Set<number> {
  const statuses = new Set<number>(ERROR_STATUSES_BY_AUTH[route.auth ?? 'none']);
  // A declared Content-Length over the limit is refused before routing, whatever the method.
  statuses.add(413);
  if (BODY_METHODS.has(route.method)) {
    // A body sent with these methods is gated even where the route reads none: a Content-Type no
    // route takes is a 415, a Content-Encoding that does not decode a 400.
    statuses.add(400);
    statuses.add(415);
  }
  for (const s of route.errorStatuses ?? []) statuses.add(s);
  if (route.path.includes('{')) statuses.add(404);
  statuses.add(500);
  return statuses;
}

/** Whether the route answers 422: it reads a body or path parameters, or the console's email header. */
function validates(route: Route): boolean {
  return Boolean(route.schemas?.body || route.bodyTypes || route.path.includes('{') || route.auth === 'console');
}

export function generateOpenApi(routes: readonly Route[], info: { title?: string; version?: string } = {}): Json {
  const components: Json = {};
  components.HTTPValidationError = toJson(HTTPValidationError, components);
  components.ValidationError = toJson(ValidationError, components);
  components.ErrorResponse = toJson(ErrorResponse, components);

  const paths: Json = {};
  for (const route of routes) {
    const item = (paths[route.path] ??= {}) as Json;
    item[route.method.toLowerCase()] = operation(route, components);
  }

  return {
    openapi: '3.1.0',
    info: {
      title: info.title ?? 'Arbitra',
      version: info.version ?? API_VERSION,
      description:
        'Self-hosted typed decision API. Every response carries x-arbitra-api-version and x-request-id. ' +
        `Request bodies may be compressed: Content-Encoding ${ACCEPTED_CODINGS.join(', ')} or identity, or a comma-separated list of them in the order applied. ` +
        'The body limit applies to the bytes sent and to the decoded body (413); data that does not decode is a 400; ' +
        'any other coding is a 415 whose Accept-Encoding header lists those taken.',
    },
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' },
        consoleToken: { type: 'apiKey', in: 'header', name: 'X-Arbitra-Console-Token' },
      },
    },
  };
}

/** One route's operation; the $id-named schemas it meets are added to `components` on the way. */
function operation(route: Route, components: Json): Json {
  const auth = route.auth ?? 'none';
  const responses = responsesOf(route, components);
  const parameters = parametersOf(route, components);
  return {
    operationId: operationId(route),
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag ?? tagOf(route.path)],
    ...(parameters.length ? { parameters } : {}),
    ...(route.schemas?.body ? { requestBody: requestBody(route, toJson(route.schemas.body, components)) } : {}),
    responses,
    ...(auth === 'api_key' ? { security: [{ bearerAuth: [] }] } : auth === 'console' ? { security: [{ consoleToken: [] }] } : {}),
  };
}

/** 200 with the route's own body, 422 where it validates, and every error status it can answer. */
function responsesOf(route: Route, components: Json): Json {
  const responses: Json = {
    '200': {
      description: 'Success',
      content: { [route.responseType ?? 'application/json']: { schema: route.schemas?.response ? toJson(route.schemas.response, components) : {} } },
    },
  };
  if (validates(route)) {
    responses['422'] = { description: 'Validation error', content: { 'application/json': { schema: ref('HTTPValidationError') } } };
  }
  for (const s of [...errorStatusesOf(route)].sort()) responses[String(s)] = errorResponse(s);
  const ownBody = route.schemas?.response;
  for (const s of (ownBody?.[ALSO_STATUSES] as number[] | undefined) ?? []) {
    responses[String(s)] = { ...errorResponse(s), description: 'The usual body, with this status', content: (responses['200'] as Json).content };
  }
  return responses;
}

/** The error body of one status, naming the catalogue's codes that answer with it. */
function errorResponse(status: number): Json {
  const codes = Object.entries(ERROR_CODES)
    .filter(([, s]) => s === status)
    .map(([c]) => c);
  return {
    description: `Error: ${codes.join(', ')}`,
    content: { 'application/json': { schema: ref('ErrorResponse') } },
    ...(status === 429 || status === 503
      ? {
          headers: {
            'Retry-After': { schema: { type: 'integer' }, description: 'seconds to wait' },
            'retry-after-ms': { schema: { type: 'integer' }, description: 'milliseconds to wait' },
          },
        }
      : {}),
    ...(status === 415 ? { headers: { 'Accept-Encoding': { schema: { type: 'string' }, description: 'the request content codings taken' } } } : {}),
  };
}

/** The path's {parameters}, and on console routes the headers that name the console's user. */
function parametersOf(route: Route, components: Json): Json[] {
  const parameters: Json[] = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => {
    const p = (route.schemas?.params?.properties as Record<string, TSchema> | undefined)?.[m[1]!];
    return { name: m[1], in: 'path', required: true, schema: p ? toJson(p, components) : { type: 'string' } };
  });
  if (route.auth === 'console') {
    parameters.push(
      { name: 'X-Arbitra-Console-Token', in: 'header', required: false, schema: { type: 'string' } },
      { name: 'X-Arbitra-User-Email', in: 'header', required: false, schema: { type: 'string' } },
    );
  }
  return parameters;
}

function ref(name: string): Json {
  return { $ref: `#/components/schemas/${name}` };
}

function tagOf(path: string): string {
  const parts = path.split('/').filter(Boolean);
  return parts[0] === 'v1' ? (parts[1] ?? 'v1') : (parts[0] ?? 'root');
}

function operationId(route: Route): string {
  const words = route.path
    .replace(/[{}]/g, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return [route.method.toLowerCase(), ...words].join('_');
}

/**
 * JSON, and on routes that take it the multipart form the third party's clients send with images:
 * the JSON request in a part named "request", each image in the part an asset names.
 */
function requestBody(route: Route, schema: Json): Json {
  const content: Json = { 'application/json': { schema } };
  if (route.bodyTypes?.includes('multipart')) {
    content['multipart/form-data'] = {
      schema: {
        type: 'object',
        required: ['request'],
        properties: { request: schema },
        additionalProperties: {
          type: 'string',
          contentMediaType: 'application/octet-stream',
          description: 'an image part, claimed by the asset whose "part" names it',
        },
      },
      encoding: { request: { contentType: 'application/json' } },
    };
  }
  // Handlers read an absent body as {}: a body none of whose members is required may be left out.
  const members: unknown = route.schemas?.body?.required;
  const required = Array.isArray(members) && members.length > 0;
  return { required, content };
}
