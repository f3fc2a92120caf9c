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

/** Installs Debian's `pkgs` in one apt-get run, or exits non-zero with one message prefixed by `name`; `hint` says what else to do. */
function aptInstall(name, pkgs, hint) {
  process.stderr.write(`${name}: installing Debian's ${pkgs.join(', ')} with apt-get\n`);
  const fail = (message) => {
    process.stderr.write(`${name}: ${message}\n`);
    process.exit(1);
  };
  if (spawnSync('sh', ['-c', 'command -v apt-get']).status !== 0) fail(`no apt-get here: install ${pkgs.join(', ')}${hint}`);
  if (!apt(['update', '-q']) || !apt(['install', '-y', '-q', '--no-install-recommends', ...pkgs])) {
    fail(`apt-get install ${pkgs.join(' ')} failed (it needs root or password-less sudo); install them${hint}`);
  }
}

/**
 * The executable of one of `commands`, installing Debian's `pkg` when none is found; exits non-zero
 * with one readable message prefixed by `name` when that cannot be done. `override` is the
 * environment variable an operator may set to another executable.
 */
export function ensureDebianCommand({ name, pkg, commands, override }) {
  if (!findCommand(commands, process.env[override])) aptInstall(name, [pkg], `, or set ${override} to its executable`);
  const exe = findCommand(commands, process.env[override]);
  if (!exe) {
    process.stderr.write(`${name}: ${pkg} was installed but ${commands[0]} is not on PATH; set ${override}\n`);
    process.exit(1);
  }
  return exe;
}

/** Each `command` of `tools` ({ pkg, command }) on PATH, installing the packages of those missing in one go; exits non-zero when that cannot be done. */
export function ensureDebianCommands(name, tools) {
  const missing = tools.filter((t) => !findCommand([t.command]));
  if (missing.length > 0) aptInstall(name, [...new Set(missing.map((t) => t.pkg))], '');
  const absent = tools.filter((t) => !findCommand([t.command]));
  if (absent.length > 0) {
    process.stderr.write(`${name}: installed, yet not on PATH: ${absent.map((t) => t.command).join(', ')}\n`);
    process.exit(1);
  }
}
