#!/usr/bin/env node
// Before the suite: a Chromium for the browser console's tests (test/console-web), Debian's own
// package installed through apt-get when none is there, the way the Python clients come from PyPI.
// Nothing downloads a browser from anywhere else; puppeteer-core only drives the one found here.
// ARBITRA_CHROMIUM names another executable.
import { spawnSync } from 'node:child_process';

const CANDIDATES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

function found() {
  if (process.env.ARBITRA_CHROMIUM) return process.env.ARBITRA_CHROMIUM;
  for (const name of CANDIDATES) {
    const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  }
  return null;
}

function fail(message) {
  process.stderr.write(`chromium: ${message}\n`);
  process.exit(1);
}

function apt(args) {
  const asRoot = process.getuid?.() === 0;
  const r = spawnSync(asRoot ? 'apt-get' : 'sudo', asRoot ? args : ['-n', 'apt-get', ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return !r.error && r.status === 0;
}

if (!found()) {
  process.stderr.write('chromium: none found; installing Debian\'s chromium package with apt-get\n');
  if (spawnSync('sh', ['-c', 'command -v apt-get']).status !== 0) {
    fail('no Chromium and no apt-get here: install Chromium and set ARBITRA_CHROMIUM to its executable');
  }
  if (!apt(['update', '-q']) || !apt(['install', '-y', '-q', '--no-install-recommends', 'chromium'])) {
    fail('apt-get install chromium failed (it needs root or password-less sudo); install it, or set ARBITRA_CHROMIUM');
  }
}
const exe = found();
if (!exe) fail('chromium was installed but is not on PATH; set ARBITRA_CHROMIUM');
const version = spawnSync(exe, ['--version'], { encoding: 'utf8' });
process.stderr.write(`chromium: ${(version.stdout || exe).trim()}\n`);
