// The shape of src/, held against its own code: imports run one way, from the processes at the top
// down through the transport, the API, the decision domain and the engine to the native addon,
// with state only in src/store; no two modules import each other, however far round. A new folder
// must be given its place here before any test passes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { circles, importsOf, layerOf, packagesOf, sourceFiles, topFolder, upwardImports, type Edge, type Layer } from './imports.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Top first: a file may import its own layer and those below it, never one above. */
const LAYERS: Layer[] = [
  { name: 'processes: the CLI, the primary, its workers and engine hosts', parts: ['src/cli/', 'src/cluster/'] },
  { name: 'composition: configuration and the assembly of the app', parts: ['src/app.ts', 'src/config.ts', 'src/workers/'] },
  { name: 'transport: sockets, the request pipeline, routing, body codings', parts: ['src/http/'] },
  { name: 'api: routes, wire schemas, errors, auth, the request gate', parts: ['src/console/', 'src/api/'] },
  { name: 'limits: the settings and contracts of rate limits and quotas', parts: ['src/limits/'] },
  { name: 'decision: question kinds, prompts, readouts, calibration', parts: ['src/decision/'] },
  { name: 'metrics: the Prometheus series', parts: ['src/metrics/'] },
  { name: 'engine: scheduling, processes, the addon binding', parts: ['src/engine/'] },
  { name: 'models: model files and their catalogue', parts: ['src/models/'] },
  { name: 'state', parts: ['src/store/'] },
  { name: 'facts any layer asks: where the package is, what an internet address is', parts: ['src/paths.ts', 'src/addresses.ts'] },
];

/** Packages that only one part of the tree may use: state in the store, the socket in the transport. */
const PACKAGE_OWNERS: Record<string, string> = {
  lmdb: 'src/store/',
  pg: 'src/store/',
  uwebsockets: 'src/http/',
  'prom-client': 'src/metrics/',
  piscina: 'src/workers/',
  '@grpc/grpc-js': 'src/engine/rpc/',
  '@grpc/proto-loader': 'src/engine/rpc/',
};

const files = sourceFiles(root, 'src');
const edges = importsOf(root, files);
const show = (e: Edge): string => `${e.from} -> ${e.to}`;

t.test('the graph is read: every file of src/ and the imports between them', async (t) => {
  t.ok(files.length > 100, `${files.length} files`);
  t.ok(edges.length > 300, `${edges.length} imports`);
  t.ok(
    edges.some((e) => e.from === 'src/cli/main.ts' && e.to === 'src/cluster/primary.ts'),
    'dynamic imports are read',
  );
});

t.test('every file of src/ has its layer', async (t) => {
  t.same(
    files.filter((f) => layerOf(f, LAYERS) < 0),
    [],
    'none outside the table',
  );
});

t.test('no import runs up the layers', async (t) => {
  t.same(upwardImports(edges, LAYERS).map(show), []);
});

t.test('no circle: between files, or between the folders of src/', async (t) => {
  t.same(circles(edges), [], 'files');
  const folders = edges.map((e) => ({ from: topFolder(e.from), to: topFolder(e.to) })).filter((e) => e.from !== e.to);
  t.same(circles(folders), [], 'folders');
});

t.test('state, sockets, metrics and threads each have one owner', async (t) => {
  const strays = files.flatMap((f) =>
    packagesOf(root, f)
      .filter((p) => PACKAGE_OWNERS[p] && !f.startsWith(PACKAGE_OWNERS[p]))
      .map((p) => `${f} imports ${p}`),
  );
  t.same(strays, []);
  t.ok(
    files.some((f) => packagesOf(root, f).includes('lmdb')),
    'the package reader finds lmdb in the store',
  );
});

t.test('the native addon is loaded by the engine alone', async (t) => {
  const loaders = files.filter((f) => /['"]arbitra\.node['"]/.test(fsText(f)));
  t.same(loaders, ['src/engine/native.ts']);
});

t.test('the check fails on the imports that ran against the layers before they were turned round', async (t) => {
  const before: Edge[] = [
    { from: 'src/decision/kinds/kind.ts', to: 'src/api/errors.ts' },
    { from: 'src/decision/decide.ts', to: 'src/api/validation.ts' },
    { from: 'src/decision/self-test.ts', to: 'src/api/schemas/systemone-validate.ts' },
    { from: 'src/decision/calibration.ts', to: 'src/api/schemas/common.ts' },
    { from: 'src/store/index.ts', to: 'src/limits/config.ts' },
    { from: 'src/limits/gate.ts', to: 'src/api/errors.ts' },
    { from: 'src/api/routes/systemone.ts', to: 'src/http/types.ts' },
    { from: 'src/api/validation.ts', to: 'src/http/json-guard.ts' },
  ];
  t.same(upwardImports(before, LAYERS).map(show), before.map(show), 'each is upward');
  const transports: Edge[] = [
    { from: 'src/http/server.ts', to: 'src/http/node-server.ts' },
    { from: 'src/http/server.ts', to: 'src/http/uws-server.ts' },
    { from: 'src/http/node-server.ts', to: 'src/http/server.ts' },
    { from: 'src/http/uws-server.ts', to: 'src/http/server.ts' },
  ];
  t.same(circles(transports), [['src/http/node-server.ts', 'src/http/server.ts', 'src/http/uws-server.ts']], 'the transports and their chooser were a circle');
  t.same(
    circles([
      { from: 'src/a.ts', to: 'src/b.ts' },
      { from: 'src/b.ts', to: 'src/c.ts' },
    ]),
    [],
    'a chain is no circle',
  );
});

function fsText(file: string): string {
  return readFileSync(path.join(root, file), 'utf8');
}
