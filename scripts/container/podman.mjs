// What the container scripts share: podman and git run with their output shown, a failure ending
// the script with one line, and what podman knows of an image.
import { spawnSync } from 'node:child_process';
import { root } from '../lib/venv.mjs';

export { root };

/** Ends the script with one line naming `name` and exit status 1. */
export function failWith(name) {
  return (message) => {
    process.stderr.write(`${name}: ${message}\n`);
    process.exit(1);
  };
}

/** Runs `cmd` with its output on this terminal; ends the script through `fail` when it fails. */
export function run(cmd, args, fail, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
  if (r.error || r.status !== 0) fail(`${[cmd, ...args].join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
}

/** Runs `cmd` and returns its standard output; null when it fails. */
export function read(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024, ...opts });
  return r.error || r.status !== 0 ? null : r.stdout.trim();
}

export const imageExists = (name) => spawnSync('podman', ['image', 'exists', name]).status === 0;

/** The image's size in bytes as `podman images` reports it (all its layers, uncompressed). */
export const imageSize = (name) => Number(read('podman', ['image', 'inspect', '--format', '{{.Size}}', name]));

/** Seconds since `started` (a Date.now()), to one decimal. */
export const secondsSince = (started) => ((Date.now() - started) / 1000).toFixed(1);
