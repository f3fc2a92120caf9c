// deploy/prometheus's alerting rules: promtool accepts them and their unit tests pass (each alert
// fires on the series that should raise it and stays quiet on a healthy node), and every series
// they read is one a real `arbitra serve` exports, under the labels they group by: a rule over a
// renamed metric would never fire, and nothing else would say so.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/paths.js';
import { cannotRun, startServer } from '../integration/helpers/server.js';

const dir = path.join(packageRoot(), 'deploy', 'prometheus');
const promtool = process.env.ARBITRA_PROMTOOL ?? 'promtool';

/** The metric names a PromQL text reads (the words before `{`, `[` or a comparison that start with arbitra_). */
function metricsOf(expr: string): string[] {
  return [...new Set(expr.match(/\barbitra_[a-z_]+/g) ?? [])];
}

const rules = fs.readFileSync(path.join(dir, 'arbitra-alerts.yml'), 'utf8');
const exprs = [...rules.matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1]!);

t.test('promtool checks the rules and passes their unit tests', async (t) => {
  const check = spawnSync(promtool, ['check', 'rules', 'arbitra-alerts.yml'], { cwd: dir, encoding: 'utf8' });
  t.equal(check.status, 0, `promtool check rules\n${check.stdout}${check.stderr}`);
  t.match(check.stdout, /SUCCESS: 7 rules found/);
  const tests = spawnSync(promtool, ['test', 'rules', 'arbitra-alerts.test.yml'], { cwd: dir, encoding: 'utf8' });
  t.equal(tests.status, 0, `promtool test rules\n${tests.stdout}${tests.stderr}`);
  const tested = fs.readFileSync(path.join(dir, 'arbitra-alerts.test.yml'), 'utf8');
  for (const [, name] of rules.matchAll(/alert: (\w+)/g)) t.match(tested, new RegExp(`alertname: ${name}\\b`), `${name} has a unit test`);
});

t.test("compose's Prometheus configuration is valid and loads the rules", async (t) => {
  const check = spawnSync(promtool, ['check', 'config', 'prometheus.yml'], { cwd: dir, encoding: 'utf8' });
  t.equal(check.status, 0, `promtool check config\n${check.stdout}${check.stderr}`);
  t.match(check.stdout, /SUCCESS: 7 rules found/, 'arbitra-alerts.yml is read from beside it');
});

if (cannotRun) {
  t.test('the rules read series the server exports', { skip: cannotRun }, async () => {});
} else {
  t.test('the rules read series the server exports, with the labels they group by', async (t) => {
    const server = await startServer(t.testdir(), { workers: 1 });
    t.teardown(() => server.stop());
    const { secret } = await server.createKey('alerts@example.com');
    // A decision and a refusal, so the request counters have series.
    t.equal((await server.call('/v1/systemone', { key: secret, body: { state: 'The invoice was paid twice.', questions: { q: { instructions: 'Is this about money?' } } } })).status, 200);
    t.equal((await server.call('/v1/systemone', { key: 'arb_not_a_key', body: {} })).status, 401);
    const exported = (await server.call('/metrics')).text;
    const names = metricsOf(exprs.join('\n'));
    t.ok(names.length >= 7, `the rules read ${names.join(', ')}`);
    for (const name of names) {
      t.match(exported, new RegExp(`^${name}\\{[^}]*\\} `, 'm'), `${name} is exported`);
    }
    t.match(exported, /^arbitra_engine_wedges_total\{engine="0"\} 0$/m, 'a wedge counter of 0 for the engine, so increase() has a start');
    t.match(exported, /^arbitra_http_requests_total\{[^}]*route="systemone"[^}]*status="200"[^}]*\} 1$/m, 'requests by route and status');
    t.match(exported, /^arbitra_engine_admission_refusals_total\{engine="0",reason="(busy|too_costly)"\} 0$/m, 'refusals by reason');
  });
}
