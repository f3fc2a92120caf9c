#!/usr/bin/env node
// Before the suite: TypeSafe's official Python client in a virtual environment of its own
// (.venv-sdk/, git-ignored), installed from PyPI at the exact versions in
// test/integration/python/requirements.txt, so test/integration/python-sdk.test.ts runs the client
// users run. A stamp holding the hash of the requirements and of the interpreter's version makes a
// second run a no-op; any change to either rebuilds the environment from scratch, so no package
// from an older pin set lingers.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const venv = path.join(root, '.venv-sdk');
const requirements = path.join(root, 'test', 'integration', 'python', 'requirements.txt');
const stamp = path.join(venv, '.requirements.sha256');
const python = path.join(venv, process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
// httpx2, the client's HTTP library, needs 3.11.
const MIN_PYTHON = [3, 11];

function fail(message) {
  process.stderr.write(`python-sdk: ${message}\n`);
  process.exit(1);
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { ok: !r.error && r.status === 0, error: r.error, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

const system = run('python3', ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])']);
if (!system.ok) {
  fail(
    system.error?.code === 'ENOENT'
      ? `python3 is not on PATH; the Python client tests need Python >= ${MIN_PYTHON.join('.')} with venv and pip`
      : `python3 does not run: ${system.out || system.error?.message}`,
  );
}
const version = system.out;
const [major, minor] = version.split('.').map(Number);
if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
  fail(`python3 is ${version}; the Python client (typesafe-sdk) needs >= ${MIN_PYTHON.join('.')}`);
}

const wanted = createHash('sha256').update(fs.readFileSync(requirements)).update(`\npython ${version}\n`).digest('hex');
const installed = fs.existsSync(python) && fs.existsSync(stamp) ? fs.readFileSync(stamp, 'utf8').trim() : null;
if (installed === wanted) process.exit(0);

process.stderr.write(`python-sdk: installing test/integration/python/requirements.txt into .venv-sdk/ (python ${version})\n`);
fs.rmSync(venv, { recursive: true, force: true });
const made = run('python3', ['-m', 'venv', venv]);
if (!made.ok) {
  fail(`python3 -m venv failed (on Debian and Ubuntu: apt-get install python3-venv):\n${made.out || made.error?.message}`);
}
if (!run(python, ['-m', 'pip', '--version']).ok) {
  fail('the new virtual environment has no pip (python3 -m ensurepip is missing; on Debian and Ubuntu: apt-get install python3-venv)');
}
// --no-deps: exactly the pinned set goes in, and `pip check` then fails if it misses a dependency,
// instead of pip quietly adding an unpinned version.
const pip = run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--quiet', '--no-deps', '-r', requirements]);
if (!pip.ok) fail(`pip install -r ${path.relative(root, requirements)} failed:\n${pip.out || pip.error?.message}`);
const check = run(python, ['-m', 'pip', 'check', '--disable-pip-version-check']);
if (!check.ok) fail(`the pinned requirements are incomplete or inconsistent (pip check):\n${check.out}`);
fs.writeFileSync(stamp, `${wanted}\n`);
