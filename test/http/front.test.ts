// The front that serves is named with where its code came from, and docs/security.md's record of the
// uWS binary is the binary this install loads: the record cannot drift from the lockfile or the file.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { describeFront, frontText } from '../../src/http/front.js';
import { uwsBinary } from '../../src/http/uws-server.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const security = fs.readFileSync(path.join(root, 'docs/security.md'), 'utf8');

t.test('uWS is named by its package and the digest of the binary loaded', async (t) => {
  const front = describeFront('uws');
  const { file } = uwsBinary();
  t.equal(front.package, 'uwebsockets@3.0.6');
  t.equal(front.binary_sha256, createHash('sha256').update(fs.readFileSync(file)).digest('hex'));
  t.match(frontText(front), /^uws \(uwebsockets@3\.0\.6, binary sha256 [0-9a-f]{8}…[0-9a-f]{4}\)$/);
});

t.test('node:http is named by the Node that runs it, with no third-party binary', async (t) => {
  const front = describeFront('node');
  t.same(front, { implementation: 'node', package: `node:http@${process.versions.node}`, binary_sha256: null });
  t.equal(frontText(front), `node (node:http@${process.versions.node})`);
});

t.test('docs/security.md records the tarball integrity package-lock.json pins', async (t) => {
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { integrity: string }> };
  t.ok(security.includes(lock.packages['node_modules/uwebsockets']!.integrity));
});

const binary = path.basename(uwsBinary().file);
const recorded = security.split('\n').find((l) => l.includes(`\`${binary}\``));
t.test(
  "docs/security.md records this binary's digest",
  { skip: recorded ? false : `docs/security.md records the binaries of Node 20 on Linux, not ${binary}` },
  async (t) => {
    t.ok(recorded!.includes(describeFront('uws').binary_sha256!), `${binary} as recorded`);
  },
);
