// /health answers without a key, so why an engine is down is told without where it listens.
import t from 'tap';
import { publicMessage } from '../../src/api/routes/health.js';

t.test('addresses and socket paths are left to the log', async (t) => {
  const cases: [string, string][] = [
    [
      'cannot reach the engine at tls://10.0.2.21:7000 (connect ECONNREFUSED 10.0.2.21:7000)',
      'cannot reach the engine at (address in the log) (connect ECONNREFUSED (address in the log))',
    ],
    ['cannot reach the engine at tcp://gpu-1.internal:7001 (timeout)', 'cannot reach the engine at (address in the log) (timeout)'],
    ['connect ENOENT /tmp/arbitra-engines-x1y2/engine-0.sock', 'connect ENOENT (address in the log)'],
    ['unix:/run/arbitra/e.sock went away', '(address in the log) went away'],
    ['no route to [2001:db8::7]:7000', 'no route to (address in the log)'],
    ['the engine refused this node: wrong engine secret', 'the engine refused this node: wrong engine secret'],
    ['the model is still loading (qwen2.5-coder-1.5b, 2/3)', 'the model is still loading (qwen2.5-coder-1.5b, 2/3)'],
  ];
  for (const [message, shown] of cases) t.equal(publicMessage(message), shown, message);
});
