#!/usr/bin/env node
// The container tools, from Debian's own packages when they are missing: podman with runc (the
// runtime scripts/container/test.mjs names), podman-compose and CNI's dnsname plugin for
// deploy/compose.yaml, and mmdebstrap, which makes the base images from Debian's archive
// (scripts/container/bases.mjs).
import { ensureDebianCommands } from '../lib/debian.mjs';

const CONTAINER_TOOLS = [
  { pkg: 'podman', command: 'podman' },
  { pkg: 'runc', command: 'runc' },
  { pkg: 'podman-compose', command: 'podman-compose' },
  { pkg: 'mmdebstrap', command: 'mmdebstrap' },
  // Service names resolve on a compose network only through this CNI plugin.
  { pkg: 'golang-github-containernetworking-plugin-dnsname', command: '/usr/lib/cni/dnsname' },
];

ensureDebianCommands('container tools', CONTAINER_TOOLS);
