#!/usr/bin/env node
// Before the suite: promtool, which checks deploy/prometheus's alerting rules against their unit
// tests (test/deploy/alerts.test.ts). It comes with Debian's prometheus package, installed through
// apt-get when promtool is not there. ARBITRA_PROMTOOL names another executable.
import { spawnSync } from 'node:child_process';
import { ensureDebianCommand } from './lib/debian.mjs';

const exe = ensureDebianCommand({ name: 'promtool', pkg: 'prometheus', commands: ['promtool'], override: 'ARBITRA_PROMTOOL' });
const version = spawnSync(exe, ['--version'], { encoding: 'utf8' });
process.stderr.write(`promtool: ${(version.stdout || version.stderr || exe).split('\n')[0].trim()}\n`);
