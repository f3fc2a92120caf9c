// A tool the suite needs from Debian's own packages (Chromium for the browser tests, promtool for
// the alerting rules), installed with apt-get when it is not on the machine already, as the Python
// clients come from PyPI. Nothing is downloaded from anywhere else.
import { spawnSync } from 'node:child_process';

/** The first of `commands` on PATH, or the executable `override` names; null when none. */
export function findCommand(commands, override) {
  if (override) return override;
  for (const name of commands) {
    const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  }
  return null;
}

function apt(args) {
  const asRoot = process.getuid?.() === 0;
  const r = spawnSync(asRoot ? 'apt-get' : 'sudo', asRoot ? args : ['-n', 'apt-get', ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return !r.error && r.status === 0;
}

/**
 * The executable of one of `commands`, installing Debian's `pkg` when none is found; exits non-zero
 * with one readable message prefixed by `name` when that cannot be done. `override` is the
 * environment variable an operator may set to another executable.
 */
export function ensureDebianCommand({ name, pkg, commands, override }) {
  const fail = (message) => {
    process.stderr.write(`${name}: ${message}\n`);
    process.exit(1);
  };
  if (!findCommand(commands, process.env[override])) {
    process.stderr.write(`${name}: none found; installing Debian's ${pkg} package with apt-get\n`);
    if (spawnSync('sh', ['-c', 'command -v apt-get']).status !== 0) {
      fail(`no ${commands[0]} and no apt-get here: install ${pkg} and set ${override} to its executable`);
    }
    if (!apt(['update', '-q']) || !apt(['install', '-y', '-q', '--no-install-recommends', pkg])) {
      fail(`apt-get install ${pkg} failed (it needs root or password-less sudo); install it, or set ${override}`);
    }
  }
  const exe = findCommand(commands, process.env[override]);
  if (!exe) fail(`${pkg} was installed but ${commands[0]} is not on PATH; set ${override}`);
  return exe;
}
