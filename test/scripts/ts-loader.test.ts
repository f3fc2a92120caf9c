// scripts/ts-loader.mjs, which every test file runs under: a .ts file with no build in dist/ (here
// one outside the checkout, as a file edited since the build would be) is transpiled on the fly,
// its NodeNext `./x.js` import finds the `./x.ts` beside it, and it keeps its own URL.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const loader = fileURLToPath(new URL('../../scripts/ts-loader.mjs', import.meta.url));

t.test('a TypeScript file with no build is transpiled, and its .js import is the .ts beside it', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-ts-loader-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'twice.ts'), 'export const twice = (n: number): number => 2 * n;\n');
  fs.writeFileSync(
    path.join(dir, 'main.ts'),
    "import { twice } from './twice.js';\ninterface Out { value: number; url: string }\nconst out: Out = { value: twice(21), url: import.meta.url };\nconsole.log(JSON.stringify(out));\n",
  );
  const stdout = execFileSync(process.execPath, ['--import', loader, path.join(dir, 'main.ts')], { encoding: 'utf8' });
  t.same(JSON.parse(stdout), { value: 42, url: new URL(`file://${path.join(dir, 'main.ts')}`).href });
});
