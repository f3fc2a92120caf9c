#!/usr/bin/env node
// Before the suite: a Chromium for the browser console's tests (test/console-web), Debian's own
// package installed through apt-get when none is there, the way the Python clients come from PyPI.
// Nothing downloads a browser from anywhere else; puppeteer-core only drives the one found here.
// ARBITRA_CHROMIUM names another executable.
import { spawnSync } from 'node:child_process';
import { ensureDebianCommand } from './lib/debian.mjs';

const exe = ensureDebianCommand({ name: 'chromium', pkg: 'chromium', commands: ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'], override: 'ARBITRA_CHROMIUM' });
const version = spawnSync(exe, ['--version'], { encoding: 'utf8' });
process.stderr.write(`chromium: ${(version.stdout || exe).trim()}\n`);
