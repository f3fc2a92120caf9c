// Runs a native test binary built with the addon (native/tests) and turns each of its "ok"/"not
// ok <test>" lines into one assertion, with the "  FAIL <test>: …" and "# <test>: …" lines it
// printed under that test as the message. A result line may end with a tag in brackets (the op
// test's "[every backend]" or "[CPU only]"), which is not part of the test's name.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { packageRoot } from '../../src/paths.js';

export function runNativeTests(t: Test, name: string, opts: { atLeast: number; timeoutMs: number; args?: string[] }): void {
  const binary = path.join(packageRoot(), 'build', 'Release', name);
  if (!fs.existsSync(binary)) {
    t.fail(`${binary} is missing: npm install (or npm run build:addon) builds it with the addon`);
    return;
  }
  const run = spawnSync(binary, opts.args ?? [], { encoding: 'utf8', timeout: opts.timeoutMs });
  const lines = run.stdout.split('\n');
  const results = lines.filter((l) => /^(not )?ok /.test(l));
  t.ok(results.length >= opts.atLeast, `the tests ran (${results.length} of them)`);
  for (const line of results) {
    const [, test = '', tag] = /^(?:not )?ok (.*?)(?: (\[[^\]]*\]))?$/.exec(line)!;
    const why = lines.filter((l) => l.startsWith(`  FAIL ${test}:`) || l.startsWith(`# ${test}:`)).join('\n');
    t.ok(line.startsWith('ok '), (tag ? `${test} ${tag}` : test) + (why ? `\n${why}` : ''));
  }
  t.equal(run.status, 0, `the binary exits 0${run.stderr ? `\n${run.stderr.slice(-4000)}` : ''}`);
}
