// GET /console and its assets: the browser console's HTML shell, and the files scripts/build-web.mjs
// put in dist/web/console (the page's compiled modules, its stylesheet, uPlot). The assets are read
// once at start and served under a path named by the hash of the whole set, so a browser may keep
// them for a year and still never mixes files of two versions; the shell itself is never cached.
// Every response carries a Content-Security-Policy that allows this origin's scripts and styles only.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { HttpResponse, Route } from '../api/route.js';
import { packageRoot } from '../paths.js';

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** No inline script or style, nothing from another origin, and never inside another site's frame. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

interface Asset {
  body: Buffer;
  type: string;
}

export interface ConsoleAssets {
  /** Hash of every file: the path segment the shell links them under. */
  version: string;
  files: Map<string, Asset>;
}

/** The built assets in `dir` (relative paths with "/"), or null when the console was not built. */
export function loadConsoleAssets(dir = path.join(packageRoot(), 'dist', 'web', 'console')): ConsoleAssets | null {
  if (!fs.existsSync(path.join(dir, 'app.js'))) return null;
  const files = new Map<string, Asset>();
  const hash = createHash('sha256');
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (CONTENT_TYPES[path.extname(entry.name)]) {
        const body = fs.readFileSync(path.join(dir, rel));
        hash.update(rel).update('\0').update(body).update('\0');
        files.set(rel, { body, type: CONTENT_TYPES[path.extname(entry.name)]! });
      }
    }
  };
  walk('');
  return { version: hash.digest('hex').slice(0, 16), files };
}

/** The HTML shell: the page's one script is a module of this origin, so the CSP needs no exception. */
export function shell(base: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Arbitra console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${base}/vendor/uPlot.min.css">
<link rel="stylesheet" href="${base}/console.css">
<script type="module" src="${base}/app.js"></script>
</head>
<body>
<div id="app"></div>
<noscript><p>The Arbitra console needs JavaScript. The same operations are on the console API: see docs/api.md.</p></noscript>
</body>
</html>
`;
}

const page = (status: number, headers: Record<string, string>, body: string | Buffer): HttpResponse => ({
  status,
  headers: { ...SECURITY_HEADERS, ...headers },
  body,
});

export function consolePageRoutes(assets: ConsoleAssets | null = loadConsoleAssets()): Route[] {
  const html = (): HttpResponse =>
    assets
      ? page(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' }, shell(`/console/assets/${assets.version}`))
      : page(503, { 'content-type': 'text/plain; charset=utf-8' }, 'The console was not built: run npm run build (npm install does it).\n');
  const asset = (version: string, rel: string): HttpResponse => {
    const file = assets?.version === version ? assets.files.get(rel) : undefined;
    if (!file) return page(404, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, 'Not found\n');
    return page(200, { 'content-type': file.type, 'cache-control': 'public, max-age=31536000, immutable' }, file.body);
  };
  // One metrics label for the shell and one for every asset, whatever the version.
  const route = (name: string, r: Pick<Route, 'path' | 'handler'>): Route => ({ method: 'GET', name, tag: 'console-web', ...r });
  return [
    route('/console', { path: '/console', handler: html }),
    route('/console', { path: '/console/', handler: html }),
    route('/console/assets', { path: '/console/assets/{version}/{file}', handler: (req) => asset(req.params.version!, req.params.file!) }),
    route('/console/assets', { path: '/console/assets/{version}/vendor/{file}', handler: (req) => asset(req.params.version!, `vendor/${req.params.file!}`) }),
  ];
}
