// The HTTP metrics' labels take what a client sends; only a bounded set of values may reach them.
import t from 'tap';
import { register } from 'prom-client';
import { httpMetrics, methodLabel } from '../../src/metrics/http.js';

t.test('the known methods keep their label; any other is "other"', async (t) => {
  for (const m of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) t.equal(methodLabel(m), m);
  for (const m of ['PROPFIND', 'FOO', 'get', 'GET ', '']) t.equal(methodLabel(m), 'other', JSON.stringify(m));
});

t.test('300 invented methods add no series', async (t) => {
  const metrics = httpMetrics();
  metrics.observe('unmatched', 'GET', 404, 0.001);
  metrics.observe('unmatched', 'BREW0', 404, 0.001);
  // Each sample's line without its value: the series the exposition holds.
  const series = (text: string) => text.split('\n').map((line) => line.replace(/ \S+$/, ''));
  const before = series(await register.metrics());
  for (let i = 1; i < 300; i++) metrics.observe('unmatched', `BREW${i}`, 404, 0.001);
  const text = await register.metrics();
  t.same(series(text), before, 'the same series as after the first');
  t.match(text, /arbitra_http_requests_total\{route="unmatched",method="other",status="404"\} 300/);
  t.notMatch(text, /BREW/);
});
