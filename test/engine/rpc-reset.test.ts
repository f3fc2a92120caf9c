// The engine port resets a refused connection, except while its shutdown is under way, when libuv
// refuses the reset and Node would leave the handle unclosed for ever (src/engine/rpc/port.ts).
import net from 'node:net';
import t from 'tap';
import { reset } from '../../src/engine/rpc/port.js';

function fake(writableEnded: boolean, writableFinished: boolean) {
  const calls: string[] = [];
  const socket = {
    writableEnded,
    writableFinished,
    destroy: () => (calls.push('destroy'), socket as unknown as net.Socket),
    resetAndDestroy: () => (calls.push('reset'), socket as unknown as net.Socket),
  };
  return { socket, calls };
}

t.test('reset: RST where it can, destroy while a shutdown is under way', async (t) => {
  for (const [ended, finished, expected] of [
    [false, false, 'reset'],
    [true, false, 'destroy'],
    [true, true, 'reset'],
  ] as const) {
    const { socket, calls } = fake(ended, finished);
    reset(socket);
    t.same(calls, [expected], `writableEnded ${ended}, writableFinished ${finished}: ${expected}`);
  }
});

t.test('a socket reset after its shutdown finished closes', async (t) => {
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.end(() => reset(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  client.on('error', () => {});
  const closed = await new Promise<boolean>((resolve) => {
    server.once('connection', (s) => s.once('close', () => resolve(true)));
    setTimeout(() => resolve(false), 5_000).unref();
  });
  client.destroy();
  t.ok(closed, "the server's socket emitted close");
});
