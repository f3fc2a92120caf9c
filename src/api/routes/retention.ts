// DELETE /v1/retention/{request_id}: the key that retained a request may delete it; any other key,
// or a second delete, finds nothing (404), so ids of other callers are never confirmed.
import { Type } from '@sinclair/typebox';
import { ApiError } from '../errors.js';
import { authenticate } from '../auth.js';
import type { Route } from '../../http/types.js';
import type { Store } from '../../store/index.js';

export const RetentionDeleteResponse = Type.Object({
  id: Type.String(),
  deleted: Type.Literal(true),
});

export function retentionRoutes(deps: { store: Store }): Route[] {
  return [
    {
      method: 'DELETE',
      path: '/v1/retention/{request_id}',
      summary: 'Delete a retained request now (only with the API key that made it).',
      schemas: { response: RetentionDeleteResponse, params: Type.Object({ request_id: Type.String() }) },
      auth: 'api_key',
      tag: 'retention',
      handler: async (req) => {
        const key = await authenticate(req, deps.store.keys);
        const id = req.params.request_id ?? '';
        if (!(await deps.store.retention.delete(key.id, id))) {
          throw new ApiError('not_found', `No retained request with id ${JSON.stringify(id)} for this API key.`);
        }
        return { status: 200, body: { id, deleted: true } };
      },
    },
  ];
}
