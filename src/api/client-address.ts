// Who the client is when a proxy stands between it and us. The socket's peer is the only address
// nobody can forge; X-Forwarded-For and X-Forwarded-Proto are read only when that peer is a proxy
// the operator named (--trusted-proxies), and then only as far as the chain stays among them: the
// rightmost address in X-Forwarded-For that is not itself a trusted proxy is the client, because
// every hop to its right was written by a proxy we trust and every hop to its left by the client.
// Addresses come back in one canonical text (src/addresses.ts), so one client is one key for every
// limiter whichever way its address was spelled.
import { formatIp, parseIp, within, type Cidr, type IpAddress } from '../addresses.js';

/**
 * The --trusted-proxies list: comma-separated addresses and CIDR blocks. Throws with the entry that
 * is neither; a block of prefix 0 is refused, since trusting every peer lets every client name its
 * own address.
 */
export function parseTrustedProxies(text: string): Cidr[] {
  if (text.trim() === '') return [];
  return text.split(',').map((raw) => {
    const entry = raw.trim();
    const slash = entry.indexOf('/');
    const ip = parseIp(slash < 0 ? entry : entry.slice(0, slash));
    if (!ip) throw new Error(`${JSON.stringify(entry)} is not an IP address or CIDR block`);
    const max = ip.family === 4 ? 32 : 128;
    let prefix = max;
    if (slash >= 0) {
      const bits = entry.slice(slash + 1);
      // An IPv4-mapped block (::ffff:10.0.0.0/104) is the IPv4 block it maps.
      const mapped = entry.slice(0, slash).includes(':') && ip.family === 4 ? 96 : 0;
      prefix = /^\d{1,3}$/.test(bits) ? Number(bits) - mapped : -1;
      if (prefix < 0 || prefix > max) throw new Error(`${JSON.stringify(entry)} has a prefix length outside 0-${max + mapped}`);
      if (prefix === 0) throw new Error(`${JSON.stringify(entry)} would trust every address, and let any client name its own`);
    }
    return { ...ip, prefix };
  });
}

/** One hop of X-Forwarded-For: an address, bracketed or not, perhaps with a port; null for anything else. */
function parseHop(text: string): IpAddress | null {
  const hop = /^(?:\[([^\]]+)\]|(\d{1,3}(?:\.\d{1,3}){3}))(?::(\d{1,5}))?$/.exec(text.trim());
  if (!hop) return parseIp(text.trim());
  return hop[3] !== undefined && Number(hop[3]) > 65535 ? null : parseIp(hop[1] ?? hop[2]!);
}

export interface ClientOrigin {
  /** The client's address, canonical (the peer's text as given when it is no address at all). */
  ip: string;
  /** Whether the client reached us over TLS, as a trusted proxy says (this server speaks plain HTTP). */
  secure: boolean;
  /** The host the client addressed: the Host header, or the first X-Forwarded-Host a trusted proxy passed on. */
  host: string;
}

/**
 * The client behind the peer `peer`: the peer itself unless it is one of `trusted`; then the
 * rightmost X-Forwarded-For hop that is not trusted (the leftmost when all are), stopping at a hop
 * that is no address, and the scheme of the last X-Forwarded-Proto value, which the nearest proxy
 * wrote.
 */
export function clientOrigin(peer: string, headers: Record<string, string>, trusted: readonly Cidr[]): ClientOrigin {
  const host = headers['host'] ?? '';
  const peerIp = parseIp(peer);
  if (!peerIp) return { ip: peer, secure: false, host };
  const isTrusted = (ip: IpAddress) => trusted.some((c) => within(ip, c));
  if (!isTrusted(peerIp)) return { ip: formatIp(peerIp), secure: false, host };
  let client = peerIp;
  const hops = (headers['x-forwarded-for'] ?? '').split(',');
  for (let i = hops.length - 1; i >= 0 && isTrusted(client); i--) {
    const hop = parseHop(hops[i]!);
    if (!hop) break;
    client = hop;
  }
  const proto = (headers['x-forwarded-proto'] ?? '').split(',').pop()!.trim().toLowerCase();
  // The first proxy wrote the first value: what the browser addressed.
  const forwardedHost = headers['x-forwarded-host']?.split(',')[0]!.trim();
  return { ip: formatIp(client), secure: proto === 'https', host: forwardedHost || host };
}
