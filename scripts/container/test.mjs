#!/usr/bin/env node
// `npm run test:container`: everything the container tests need, then the tests themselves.
//
// 1. podman, runc, podman-compose and mmdebstrap from Debian's packages when missing (tools.mjs),
//    and the small test model the containers serve from a bind mount of models/ (test-models.mjs);
// 2. podman's settings for the machines this suite runs on (containers-conf.mjs);
// 3. the base images, made locally where they cannot be pulled (bases.mjs);
// 4. the CPU image of this commit, and of the commit it upgrades from (ARBITRA_UPGRADE_FROM,
//    default HEAD~1), each from `git archive` of its commit (images.mjs);
// 5. the container tier of the suite (test/container, `scripts/run-tests.mjs --container`), told
//    the two images' names.
// Each step's time is printed at the end, beside tap's summary.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { writeContainersConf } from './containers-conf.mjs';
import { failWith, read, root, secondsSince } from './podman.mjs';

const fail = failWith('test:container');
const timings = [];
/** Runs one step (a node script of this repository) with its output shown; stops at the first failure. */
function step(what, script, args = [], env = process.env) {
  const started = Date.now();
  process.stdout.write(`== test:container: ${what}\n`);
  const r = spawnSync(process.execPath, [path.join(root, script), ...args], { cwd: root, stdio: 'inherit', env });
  timings.push(`${what} ${secondsSince(started)} s`);
  return r.status ?? 1;
}
const started = Date.now();

if (step('tools', 'scripts/container/tools.mjs') !== 0) fail('the container tools could not be installed');
if (step('test model', 'scripts/test-models.mjs') !== 0) fail('the test model could not be fetched');

const env = { ...process.env, CONTAINERS_CONF: writeContainersConf() };

if (step('base images', 'scripts/container/bases.mjs', [], env) !== 0) fail('the base images could not be made');

const from = process.env.ARBITRA_UPGRADE_FROM || 'HEAD~1';
const commits = { current: read('git', ['rev-parse', 'HEAD']), previous: read('git', ['rev-parse', '--verify', `${from}^{commit}`]) };
if (!commits.previous) fail(`${from} is not a commit here (a clone with history is needed, or ARBITRA_UPGRADE_FROM naming one)`);
const image = (commit) => `localhost/arbitra:cpu-${commit.slice(0, 7)}`;
if (step('image of this commit', 'scripts/container/images.mjs', ['--commit', commits.current], env) !== 0) fail('the image of this commit did not build');
if (step(`image of ${from}`, 'scripts/container/images.mjs', ['--commit', commits.previous], env) !== 0) fail(`the image of ${from} did not build`);

const status = step('tests', 'scripts/run-tests.mjs', ['--container'], {
  ...env,
  ARBITRA_TEST_IMAGE: image(commits.current),
  ARBITRA_TEST_PREVIOUS_IMAGE: image(commits.previous),
});
process.stdout.write(`test:container took ${secondsSince(started)} s: ${timings.join(', ')}\n`);
process.exit(status);
