// The engine client's guard against a stuck engine must not cut off a long prompt that is simply
// slow: its allowance grows with the text to score.
import t from 'tap';
import { requestTimeoutMs } from '../../src/engine/client.js';

const request = (prefix: string, suffixes: string[]) => ({ system: 'sys', prefix, branches: suffixes.map((suffix) => ({ suffix, answers: [[1]] })), maxPromptTokens: 1 << 20 });

t.test('a short request gets about two minutes; a 30,000-token state gets several more', async (t) => {
  const short = requestTimeoutMs(request('a short state', ['Is it?']));
  t.ok(short >= 120_000 && short < 125_000, `short: ${short} ms`);
  // ~4 characters per token: a 30,000-token state is ~120,000 characters.
  const long = requestTimeoutMs(request('x'.repeat(120_000), ['Is it?']));
  t.ok(long >= 120_000 + 500_000, `long: ${long} ms`);
  t.ok(requestTimeoutMs(request('s', ['a', 'b'.repeat(1000)])) > requestTimeoutMs(request('s', ['a'])), 'every branch counts');
});
