// The console page's asset set: hashed as a whole, served only under its own version, and the shell
// and every asset carrying the CSP. Pure: a temporary folder stands in for dist/web/console.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CONSOLE_CSP, consolePageRoutes, loadConsoleAssets, shell } from '../../src/console/page.js';
import type { HttpResponse, Route } from '../../src/api/route.js';
import { fakeRequest } from './helpers.js';

function build(dir: string, app: string) {
  fs.mkdirSync(path.join(dir, 'vendor'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'app.js'), app);
  fs.writeFileSync(path.join(dir, 'console.css'), 'body{}');
  fs.writeFileSync(path.join(dir, 'vendor', 'uPlot.esm.js'), 'export default 1;');
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not served');
}

const get = async (routes: Route[], pattern: string, params: Record<string, string> = {}): Promise<HttpResponse> => {
  const route = routes.find((r) => r.path === pattern)!;
  return route.handler(fakeRequest({}, { path: pattern, params }));
};

t.test('the asset set is versioned by the hash of all of it', async (t) => {
  const a = t.testdir();
  build(a, 'console.log(1)');
  const first = loadConsoleAssets(a)!;
  t.match(first.version, /^[0-9a-f]{16}$/);
  t.same([...first.files.keys()].sort(), ['app.js', 'console.css', 'vendor/uPlot.esm.js'], 'only the kinds of file a page loads');
  t.equal(loadConsoleAssets(a)!.version, first.version, 'the same files, the same version');
  fs.writeFileSync(path.join(a, 'vendor', 'uPlot.esm.js'), 'export default 2;');
  t.not(loadConsoleAssets(a)!.version, first.version, 'any file changed, a new version');
  t.equal(loadConsoleAssets(path.join(a, 'missing')), null, 'not built');
});

t.test('the routes serve the shell, the current version only, and the CSP on everything', async (t) => {
  const dir = t.testdir();
  build(dir, 'console.log(1)');
  const assets = loadConsoleAssets(dir)!;
  const routes = consolePageRoutes(assets);
  const page = await get(routes, '/console');
  t.equal(page.status, 200);
  t.equal(page.headers!['content-security-policy'], CONSOLE_CSP);
  t.equal(page.headers!['x-frame-options'], 'DENY');
  t.match(String(page.body), `src="/console/assets/${assets.version}/app.js"`);
  const js = await get(routes, '/console/assets/{version}/{file}', { version: assets.version, file: 'app.js' });
  t.equal(js.status, 200);
  t.equal(String(js.body), 'console.log(1)');
  t.match(js.headers!['cache-control'], /immutable/);
  t.equal(js.headers!['content-security-policy'], CONSOLE_CSP);
  const vendor = await get(routes, '/console/assets/{version}/vendor/{file}', { version: assets.version, file: 'uPlot.esm.js' });
  t.equal(vendor.status, 200);
  for (const [version, file] of [
    ['0123456789abcdef', 'app.js'],
    [assets.version, 'notes.txt'],
    [assets.version, '..%2Fapp.js'],
  ] as const) {
    const miss = await get(routes, '/console/assets/{version}/{file}', { version, file });
    t.equal(miss.status, 404, `${version}/${file} is not served`);
  }
  const unbuilt = await get(consolePageRoutes(null), '/console');
  t.equal(unbuilt.status, 503);
  t.match(String(unbuilt.body), /npm run build/);
});

t.test('the shell has no inline script or style for the CSP to forbid', async (t) => {
  const html = shell('/console/assets/v');
  t.notMatch(html, /<script>|<style|\sstyle=|\son[a-z]+=/i);
  t.match(html, /<script type="module" src="\/console\/assets\/v\/app.js"><\/script>/);
  t.match(html, /<html lang="en">/);
});
