// The fast tier (`npm run test:fast`) is chosen by what each test file imports: this holds the
// choice to a few files whose needs are known, so a change to the selection that lets a model or
// a server into the fast tier, or leaves a pure test out of it, fails here.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = fileURLToPath(new URL('../../', import.meta.url));
const listing = execFileSync(process.execPath, ['scripts/run-tests.mjs', '--list'], { cwd: root, encoding: 'utf8' });
const tier = new Map(
  listing
    .trim()
    .split('\n')
    .map((line) => {
      const [name, file] = line.split(/\s+/);
      return [file!, name!];
    }),
);

t.test('every test file is in one tier', async (t) => {
  t.ok(tier.size > 50, `${tier.size} files listed`);
  t.same(
    [...tier.values()].filter((v) => !['fast', 'slow', 'container', 'device'].includes(v)),
    [],
  );
});

t.test('pure modules and LMDB stores are fast; models, servers, PostgreSQL and the browser are not', async (t) => {
  for (const file of ['test/engine/admission.test.ts', 'test/decision/readout.test.ts', 'test/store/store.test.ts', 'test/engine/native-scheduler.test.ts']) {
    t.equal(tier.get(file), 'fast', file);
  }
  for (const file of [
    'test/cluster/heal.test.ts',
    'test/engine/scoring.test.ts',
    'test/store/postgres/keys.test.ts',
    'test/console-web/console.test.ts',
    'test/cli/cli.test.ts',
  ]) {
    t.equal(tier.get(file), 'slow', file);
  }
});

t.test('a file that runs podman containers is in the container tier, which npm test leaves out', async (t) => {
  t.equal(tier.get('test/container/image.test.ts'), 'container');
  t.equal(tier.get('test/deploy/deploy.test.ts'), 'fast', 'the checks of deploy/ files themselves stay fast');
});

t.test('the CPU run of the device pipeline is in the device tier, its cheap checks in the fast one', async (t) => {
  t.equal(tier.get('test/device/pipeline.test.ts'), 'device');
  t.equal(tier.get('test/scripts/device-pack.test.ts'), 'fast');
});
