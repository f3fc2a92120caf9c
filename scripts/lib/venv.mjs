// A Python virtual environment that holds exactly one pinned requirement set, for the test tools
// that run on Python (TypeSafe's client, the fuzzer). A stamp holding the hash of the requirements
// and of the interpreter's version makes a second run a no-op; any change to either rebuilds the
// environment from scratch, so no package from an older pin set lingers.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The interpreter inside a virtual environment folder. */
export function venvPython(venv) {
  return path.join(venv, process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { ok: !r.error && r.status === 0, error: r.error, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

/**
 * Makes `dir` (relative to the repository root) hold exactly `requirements`, or exits non-zero with
 * one readable message prefixed by `name`. `source` names the requirements in messages; `needs`
 * says what wants `minPython` ([major, minor]).
 */
export function ensureVenv({ name, dir, requirements, source, minPython, needs }) {
  const fail = (message) => {
    process.stderr.write(`${name}: ${message}\n`);
    process.exit(1);
  };
  const venv = path.join(root, dir);
  const python = venvPython(venv);
  const stamp = path.join(venv, '.requirements.sha256');

  const system = run('python3', ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])']);
  if (!system.ok) {
    fail(
      system.error?.code === 'ENOENT'
        ? `python3 is not on PATH; ${needs} needs Python >= ${minPython.join('.')} with venv and pip`
        : `python3 does not run: ${system.out || system.error?.message}`,
    );
  }
  const version = system.out;
  const [major, minor] = version.split('.').map(Number);
  if (major < minPython[0] || (major === minPython[0] && minor < minPython[1])) {
    fail(`python3 is ${version}; ${needs} needs >= ${minPython.join('.')}`);
  }

  const wanted = createHash('sha256').update(requirements).update(`\npython ${version}\n`).digest('hex');
  const installed = fs.existsSync(python) && fs.existsSync(stamp) ? fs.readFileSync(stamp, 'utf8').trim() : null;
  if (installed === wanted) return;

  process.stderr.write(`${name}: installing ${source} into ${dir}/ (python ${version})\n`);
  fs.rmSync(venv, { recursive: true, force: true });
  const made = run('python3', ['-m', 'venv', venv]);
  if (!made.ok) {
    fail(`python3 -m venv failed (on Debian and Ubuntu: apt-get install python3-venv):\n${made.out || made.error?.message}`);
  }
  if (!run(python, ['-m', 'pip', '--version']).ok) {
    fail('the new virtual environment has no pip (python3 -m ensurepip is missing; on Debian and Ubuntu: apt-get install python3-venv)');
  }
  // The set goes into the environment it describes, so what a folder holds can be read from it.
  const file = path.join(venv, 'requirements.txt');
  fs.writeFileSync(file, requirements);
  // --no-deps: exactly the pinned set goes in, and `pip check` then fails if it misses a dependency,
  // instead of pip quietly adding an unpinned version.
  const pip = run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--quiet', '--no-deps', '-r', file]);
  if (!pip.ok) fail(`pip install of ${source} failed:\n${pip.out || pip.error?.message}`);
  const check = run(python, ['-m', 'pip', 'check', '--disable-pip-version-check']);
  if (!check.ok) fail(`the pinned requirements are incomplete or inconsistent (pip check):\n${check.out}`);
  fs.writeFileSync(stamp, `${wanted}\n`);
}
