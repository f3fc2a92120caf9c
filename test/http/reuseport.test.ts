// Several processes serve one port with uWS (SO_REUSEPORT on Linux): what `arbitra serve` relies on
// when its cluster workers each listen with uWS.
import t from 'tap';
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const fixture = fileURLToPath(new URL('./fixtures/listen-worker.ts', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function start(port: number): Promise<{ child: ChildProcess; msg: Record<string, unknown> }> {
  const child = fork(fixture, [String(port)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve) => child.once('message', (msg) => resolve({ child, msg: msg as Record<string, unknown> })));
}

function pidOf(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/pid', agent: false }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(JSON.parse(body).pid));
      })
      .on('error', reject);
  });
}

t.test(
  'two uWS processes listen on one port and share its connections',
  { skip: process.platform !== 'linux' && 'SO_REUSEPORT balancing is Linux-only' },
  async (t) => {
    const port = await freePort();
    const a = await start(port);
    const b = await start(port);
    t.teardown(() => {
      a.child.kill();
      b.child.kill();
    });
    t.same(a.msg, { listening: port, implementation: 'uws' });
    t.same(b.msg, { listening: port, implementation: 'uws' }, 'the second listener is accepted');
    const pids = new Set<number>();
    for (let i = 0; i < 60 && pids.size < 2; i++) pids.add(await pidOf(port));
    t.same([...pids].sort(), [a.child.pid, b.child.pid].sort(), 'the kernel spreads connections over both');

    // A plain listener without SO_REUSEPORT cannot join: how `arbitra serve` detects a port in use.
    const probe = net.createServer();
    const err = await new Promise<NodeJS.ErrnoException>((resolve) => probe.once('error', resolve).listen({ port, host: '127.0.0.1', exclusive: true }));
    t.equal(err.code, 'EADDRINUSE');
  },
);
