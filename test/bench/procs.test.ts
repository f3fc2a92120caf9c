// Reading processes from /proc: the parsing is pure, and the live scans find this process and its child.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { cpuTicks, findProcess, memoryByProcess, parentPid, roleOf, rssMb, sampleServer, ticksPerSecond, treeCpuSeconds } from '../../bench/lib/procs.js';

t.test('parentPid survives spaces and parentheses in the command name', async (t) => {
  t.equal(parentPid('123 (node) S 45 123 123 0 -1'), 45);
  t.equal(parentPid('123 (my (odd) name) R 678 1 1 0'), 678);
});

t.test('rssMb reads VmRSS in kB; a zombie has none', async (t) => {
  t.equal(rssMb('Name:\tnode\nVmRSS:\t   2048 kB\nThreads:\t7\n'), 2);
  t.ok(Number.isNaN(rssMb('Name:\tnode\nState:\tZ (zombie)\n')));
});

t.test('the engine process is told apart from HTTP workers by its entry point', async (t) => {
  t.equal(roleOf('/usr/bin/node /srv/dist/src/engine/process-main.js'), 'engine');
  t.equal(roleOf('/usr/bin/node /srv/dist/src/cli/main.js serve --workers 2'), 'worker');
});

t.test('memoryByProcess gives each pid a row: start, max and end in time order', async (t) => {
  const rows = memoryByProcess([
    {
      atS: 0,
      samples: [
        { pid: 10, role: 'engine', rssMb: 100 },
        { pid: 1, role: 'primary', rssMb: 50 },
      ],
    },
    {
      atS: 2,
      samples: [
        { pid: 10, role: 'engine', rssMb: 300 },
        { pid: 1, role: 'primary', rssMb: 55 },
      ],
    },
    {
      atS: 4,
      samples: [
        { pid: 11, role: 'engine', rssMb: 90 },
        { pid: 1, role: 'primary', rssMb: 52 },
      ],
    },
  ]);
  t.same(
    rows.map((r) => [r.role, r.pid, r.firstSeenS, r.lastSeenS, r.rssMb.start, r.rssMb.max, r.rssMb.end]),
    [
      ['primary', 1, 0, 4, 50, 55, 52],
      ['engine', 10, 0, 2, 100, 300, 300],
      ['engine', 11, 4, 4, 90, 90, 90],
    ],
  );
});

t.test('sampleServer finds a live process and its memory', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const [self] = sampleServer(process.pid);
  t.equal(self?.role, 'primary');
  t.ok(self!.rssMb > 1);
});

t.test('cpuTicks adds own and reaped children’s user and system time', async (t) => {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
  t.equal(cpuTicks('42 (post gres) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 20 5 20 0 1 0'), 35);
});

t.test(
  'treeCpuSeconds counts a child that burnt CPU and exited; findProcess finds this process',
  { skip: process.platform !== 'linux' && 'reads /proc' },
  async (t) => {
    const hz = ticksPerSecond();
    t.ok(hz > 0);
    const before = treeCpuSeconds(process.pid, hz);
    const r = spawnSync(process.execPath, ['-e', 'const end = Date.now() + 300; while (Date.now() < end);']);
    t.equal(r.status, 0);
    t.ok(treeCpuSeconds(process.pid, hz) - before >= 0.2, 'the reaped child’s CPU is counted');
    t.equal(
      findProcess((argv) => argv.includes(`--marker-${process.pid}`)),
      null,
    );
    t.ok((findProcess((argv) => argv[0] === process.argv0 || argv[0] === process.execPath) ?? Infinity) <= process.pid);
  },
);
