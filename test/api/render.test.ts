// What an error answer may repeat of the request: a non-422 error whose message or context names
// what the client sent (a model, an id) is cut like a 422's items; a short one is sent as it is.
import t from 'tap';
import { ApiError } from '../../src/api/errors.js';
import { renderError } from '../../src/api/render.js';
import { fakeRequest } from '../helpers/request.js';

const request = fakeRequest({}, { method: 'POST', path: '/v1/systemone', ip: '' });
const detailOf = (err: ApiError): Record<string, unknown> =>
  (JSON.parse(renderError(request, err).body.toString()) as { detail: Record<string, unknown> }).detail;

t.test('a short error is sent whole', async (t) => {
  const err = new ApiError('not_found', 'The model "x" is not served here; use one of: a, b.', { model: 'x', available_models: ['a', 'b'] });
  t.same(detailOf(err), { error_type: 'not_found', message: err.message, model: 'x', available_models: ['a', 'b'] });
});

t.test('a model name of 450,000 quotes is cut in the message and the context', async (t) => {
  const name = '"'.repeat(450_000);
  const err = new ApiError('not_found', `The model ${JSON.stringify(name)} is not served here; use one of: a, b.`, {
    model: name,
    available_models: ['a', 'b'],
  });
  const wire = renderError(request, err);
  // Whole, the message alone would be 1.8 MB as JSON: the name escaped twice.
  t.ok(wire.body.length < 16 * 1024, `${wire.body.length} bytes`);
  const detail = detailOf(err);
  t.equal(detail.error_type, 'not_found');
  t.match(detail.message, /^The model "[\\"]+…\[\d+ more characters\]$/);
  t.match(detail.model, /^"+…\[\d+ more characters\]$/);
  t.same(detail.available_models, ['a', 'b'], 'what the server adds stays whole');
});
