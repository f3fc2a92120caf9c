#!/usr/bin/env node
// podman's settings for the machines the container tests and bench run on, in a containers.conf of
// their own (CONTAINERS_CONF; the machine's own configuration is not touched): runc and cgroupfs,
// since these machines have no systemd to manage cgroups, the file event log, and ulimits below the
// machine's hard limits (podman's defaults ask for more than a container may have here, and runc
// then refuses to start it). Run as a command, it writes the file and prints its path:
//
//   CONTAINERS_CONF="$(node scripts/container/containers-conf.mjs)" podman run ...
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { read } from './podman.mjs';

/** Writes the containers.conf for this machine (the same content every time) and returns its path. */
export function writeContainersConf() {
  const hard = (flag) => Number(read('sh', ['-c', `ulimit -H${flag}`])) || 65_536;
  const limit = (flag, most) => Math.min(most, Math.floor(hard(flag) * 0.8));
  const file = path.join(os.tmpdir(), 'arbitra-containers.conf');
  const temporary = `${file}.${process.pid}`;
  fs.writeFileSync(
    temporary,
    `[containers]
default_ulimits = ["nofile=${limit('n', 65_536)}:${limit('n', 65_536)}", "nproc=${limit('u', 32_768)}:${limit('u', 32_768)}"]

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
`,
  );
  // Renamed into place, so a run that reads it while another writes it never sees half a file.
  fs.renameSync(temporary, file);
  return file;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${writeContainersConf()}\n`);
