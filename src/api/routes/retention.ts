// DELETE /v1/retention/{request_id}: the key that retained a request may delete it; any other key,
// or a second delete, finds nothing (404), so ids of other callers are never confirmed. An id too
// long to be one (see PathId) is a 422 before the store is asked.
import { Type } from '@sinclair/typebox';
import { ApiError } from '../errors.js';
import { authenticate } from '../auth.js';
import type { SecretThrottle } from '../secret-throttle.js';
import { PathId } from '../schemas/common.js';
import { compileParamsParser } from '../validation.js';
import type { Route } from '../route.js';
import type { Store } from '../../store/index.js';

export const RetentionDeleteResponse = Type.Object({
  id: Type.String(),
  deleted: Type.Literal(true),
});

const RetentionParams = Type.Object({ request_id: PathId });

export function retentionRoutes(deps: { store: Store; secretThrottle: SecretThrottle }): Route[] {
  const parseParams = compileParamsParser(RetentionParams);
  return [
    {
      method: 'DELETE',
      path: '/v1/retention/{request_id}',
      summary: 'Delete a retained request now (only with the API key that made it).',
      schemas: { response: RetentionDeleteResponse, params: RetentionParams },
      auth: 'api_key',
      tag: 'retention',
      handler: async (req) => {
        const key = await authenticate(req, deps.store.keys, deps.secretThrottle);
        const { request_id: id } = parseParams(req);
        if (!(await deps.store.retention.delete(key.id, id))) {
          throw new ApiError('not_found', `No retained request with id ${JSON.stringify(id)} for this API key.`);
        }
        return { status: 200, body: { id, deleted: true } };
      },
    },
  ];
}
