// Who the client is behind a proxy: pure functions, no server.
import t from 'tap';
import { addressBlock, canonicalIp } from '../../src/addresses.js';
import { clientOrigin, parseTrustedProxies } from '../../src/api/client-address.js';

const proxies = parseTrustedProxies('10.0.1.5, 10.0.2.0/24, fd00::/64, 127.0.0.1');
const origin = (peer: string, headers: Record<string, string> = {}) => clientOrigin(peer, headers, proxies);

t.test('a peer that is no trusted proxy is the client, whatever its headers say', async (t) => {
  const spoofed = { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' };
  t.same(origin('198.51.100.7', spoofed), { ip: '198.51.100.7', secure: false, host: '' });
  t.same(clientOrigin('10.0.1.5', spoofed, []), { ip: '10.0.1.5', secure: false, host: '' }, 'no proxy is trusted by default');
  t.same(origin('10.0.1.6', spoofed), { ip: '10.0.1.6', secure: false, host: '' }, 'the address next to a trusted one is not');
  t.same(origin('::ffff:198.51.100.7', spoofed), { ip: '198.51.100.7', secure: false, host: '' }, 'an IPv4-mapped peer reads as IPv4');
});

t.test('from a trusted proxy, the rightmost forwarded address that is not a trusted proxy is the client', async (t) => {
  t.same(origin('10.0.1.5', { 'x-forwarded-for': '203.0.113.9' }), { ip: '203.0.113.9', secure: false, host: '' });
  // What the client wrote itself sits left of what HAProxy appended: it is never reached.
  t.same(origin('10.0.1.5', { 'x-forwarded-for': '1.2.3.4, 203.0.113.9' }).ip, '203.0.113.9', 'a forged hop on the left is ignored');
  t.same(origin('10.0.1.5', { 'x-forwarded-for': '203.0.113.9, 10.0.2.17' }).ip, '203.0.113.9', 'through a chain of trusted proxies');
  t.same(origin('10.0.1.5', { 'x-forwarded-for': '10.0.2.1, 10.0.2.17' }).ip, '10.0.2.1', 'every hop trusted: the leftmost');
  t.same(origin('10.0.1.5').ip, '10.0.1.5', 'no header: the proxy itself');
  t.same(origin('::ffff:10.0.1.5', { 'x-forwarded-for': '203.0.113.9' }).ip, '203.0.113.9', 'an IPv4-mapped proxy is trusted as IPv4');
  t.same(origin('127.0.0.1', { 'x-forwarded-for': '[2001:db8::1]:4711' }).ip, '2001:db8::1', 'bracketed IPv6 with a port');
  t.same(origin('127.0.0.1', { 'x-forwarded-for': '203.0.113.9:4711' }).ip, '203.0.113.9', 'IPv4 with a port');
  t.same(origin('fd00::7', { 'x-forwarded-for': '2001:DB8:0:0:0:0:0:1' }).ip, '2001:db8::1', 'an IPv6 proxy, and the address canonical');
  t.same(origin('fd00:0:0:1::7', { 'x-forwarded-for': '203.0.113.9' }).ip, 'fd00:0:0:1::7', 'outside the trusted /64');
});

t.test('a hop that is no address ends the walk where it is: nothing to its left is believed', async (t) => {
  for (const junk of ['unknown', '', 'garbage', '999.1.1.1', '1.2.3', '1.2.3.4.5', '::1::2', '01.2.3.4', '1.2.3.4:99999', '[1.2.3.4]x']) {
    t.same(origin('10.0.1.5', { 'x-forwarded-for': `198.51.100.1, ${junk}` }).ip, '10.0.1.5', `rightmost hop ${JSON.stringify(junk)}: the proxy`);
  }
  t.same(origin('10.0.1.5', { 'x-forwarded-for': 'garbage, 10.0.2.3' }).ip, '10.0.2.3', 'junk past a trusted hop: that hop');
  t.same(origin('10.0.1.5', { 'x-forwarded-for': `${'1.1.1.1,'.repeat(2000)}203.0.113.9` }).ip, '203.0.113.9', 'a long chain is read from the right');
});

t.test('the scheme is the last X-Forwarded-Proto value, from a trusted proxy only', async (t) => {
  t.equal(origin('10.0.1.5', { 'x-forwarded-proto': 'https' }).secure, true);
  t.equal(origin('10.0.1.5', { 'x-forwarded-proto': 'HTTPS ' }).secure, true, 'case and spaces');
  t.equal(origin('10.0.1.5', { 'x-forwarded-proto': 'https, http' }).secure, false, 'the nearest proxy says http');
  t.equal(origin('10.0.1.5', { 'x-forwarded-proto': 'http, https' }).secure, true, 'the nearest proxy says https');
  t.equal(origin('10.0.1.5', { 'x-forwarded-proto': 'ftp' }).secure, false);
  t.equal(origin('10.0.1.5').secure, false);
});

t.test('the host addressed is the first X-Forwarded-Host of a trusted proxy, else Host', async (t) => {
  const sent = { host: '10.0.0.2:8080', 'x-forwarded-host': 'arbitra.example.eu, inner.example' };
  t.equal(origin('10.0.1.5', sent).host, 'arbitra.example.eu', 'what the browser addressed, as the first proxy wrote it');
  t.equal(origin('198.51.100.7', sent).host, '10.0.0.2:8080', "a client's own X-Forwarded-Host is ignored");
  t.equal(origin('10.0.1.5', { host: 'h:1' }).host, 'h:1', 'no forwarded host: Host');
  t.equal(origin('10.0.1.5', { host: 'h:1', 'x-forwarded-host': ' ' }).host, 'h:1', 'an empty one: Host');
});

t.test('addresses are written one way, so one client is one key', async (t) => {
  const same: [string, string][] = [
    ['::1', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['::ffff:1.2.3.4', '1.2.3.4'],
    ['::FFFF:0102:0304', '1.2.3.4'],
    ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
    ['::', '::'],
    ['1::', '1::'],
    ['::2:3:4:5:6:7:8', '0:2:3:4:5:6:7:8'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
  ];
  for (const [given, canonical] of same) t.equal(canonicalIp(given), canonical, given);
  t.equal(canonicalIp('not an address'), 'not an address', 'anything else is left as it is');
});

t.test('a limiter counts IPv4 by address and IPv6 by /64', async (t) => {
  t.equal(addressBlock('203.0.113.9'), '203.0.113.9');
  t.equal(addressBlock('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(addressBlock('2001:db8:1:2:bbbb::7'), '2001:db8:1:2::/64', 'another address of the same subscriber');
  t.not(addressBlock('2001:db8:1:3::1'), addressBlock('2001:db8:1:2::1'), 'the next /64 is another client');
});

t.test('--trusted-proxies takes addresses and blocks, and refuses anything else', async (t) => {
  t.same(parseTrustedProxies(''), []);
  t.equal(parseTrustedProxies('10.0.0.0/8, ::1, ::ffff:192.168.0.0/112').length, 3);
  t.same(
    clientOrigin('192.168.3.4', { 'x-forwarded-for': '203.0.113.9' }, parseTrustedProxies('::ffff:192.168.0.0/112')).ip,
    '203.0.113.9',
    'a mapped block is its IPv4 block',
  );
  t.same(clientOrigin('10.200.1.1', { 'x-forwarded-for': '203.0.113.9' }, parseTrustedProxies('10.9.9.9/8')).ip, '203.0.113.9', 'host bits are ignored');
  for (const bad of ['10.0.0.0/33', 'fd00::/129', 'proxy.local', '10.0.0.1,', '10.0.0.0/x', '0.0.0.0/0', '::/0', '10.0.0.0/']) {
    t.throws(() => parseTrustedProxies(bad), JSON.stringify(bad));
  }
  t.throws(() => parseTrustedProxies('0.0.0.0/0'), /trust every address/);
});
