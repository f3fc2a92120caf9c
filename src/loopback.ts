// Whether an address is this machine's own: what only a local process can reach, so that a weak
// secret there is a warning rather than a refusal, and a plain-http download cannot be changed on
// a network.
import net from 'node:net';

/** 127.0.0.0/8, ::1, an IPv4-mapped loopback or the name localhost. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  if (net.isIPv4(v4)) return v4.startsWith('127.');
  return net.isIPv6(h) && /^(0*:){1,7}0*1$|^::1$/.test(h);
}
