// Who the client is when a proxy stands between it and us. The socket's peer is the only address
// nobody can forge; X-Forwarded-For and X-Forwarded-Proto are read only when that peer is a proxy
// the operator named (--trusted-proxies), and then only as far as the chain stays among them: the
// rightmost address in X-Forwarded-For that is not itself a trusted proxy is the client, because
// every hop to its right was written by a proxy we trust and every hop to its left by the client.
// Addresses come back in one canonical text (RFC 5952 for IPv6, an IPv4-mapped IPv6 address as
// IPv4), so one client is one key for every limiter whichever way its address was spelled.

interface IpAddress {
  family: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: number[];
}

/** An address block, e.g. 10.0.1.0/24 or fd00::/8; plain data, so a Config holding it crosses processes. */
export interface Cidr extends IpAddress {
  prefix: number;
}

function parseIpv4(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = parts.map((p) => (/^(0|[1-9]\d{0,2})$/.test(p) ? Number(p) : 256));
  return bytes.every((b) => b <= 255) ? bytes : null;
}

function parseIpv6(text: string): number[] | null {
  // A zone (fe80::1%eth0) names the link, not the host: it is not part of the address.
  const zone = text.indexOf('%');
  let body = (zone < 0 ? text : text.slice(0, zone)).toLowerCase();
  const tail: number[] = [];
  const lastColon = body.lastIndexOf(':');
  const last = body.slice(lastColon + 1);
  if (last.includes('.')) {
    // An embedded IPv4 address is the last two groups: "::ffff:1.2.3.4" keeps "::ffff", "::1.2.3.4" keeps "::".
    const v4 = parseIpv4(last);
    if (!v4) return null;
    tail.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    body = body.slice(0, body.endsWith(`::${last}`) ? lastColon + 1 : lastColon);
  }
  const halves = body.split('::');
  if (halves.length > 2) return null;
  const groups = (s: string): number[] | null => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-f]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !rest) return null;
  const given = head.length + rest.length + tail.length;
  if (halves.length === 2 ? given > 7 : given !== 8) return null;
  const words = [...head, ...Array<number>(8 - given).fill(0), ...rest, ...tail];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

const isV4Mapped = (b: number[]): boolean => b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;

/** The address in `text` (IPv4, IPv6 with or without a zone), an IPv4-mapped IPv6 one as IPv4; null when it is none. */
function parseIp(text: string): IpAddress | null {
  if (text.includes(':')) {
    const bytes = parseIpv6(text);
    if (!bytes) return null;
    return isV4Mapped(bytes) ? { family: 4, bytes: bytes.slice(12) } : { family: 6, bytes };
  }
  const bytes = parseIpv4(text);
  return bytes && { family: 4, bytes };
}

function formatIp({ family, bytes }: IpAddress): string {
  if (family === 4) return bytes.join('.');
  const words = Array.from({ length: 8 }, (_, i) => (bytes[2 * i]! << 8) | bytes[2 * i + 1]!);
  // RFC 5952: the longest run of two or more zero groups (the first of equals) becomes "::".
  let best = { at: -1, len: 1 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(':');
  if (best.at < 0) return hex(words);
  return `${hex(words.slice(0, best.at))}::${hex(words.slice(best.at + best.len))}`;
}

/** `text` as this module writes addresses, or `text` itself when it is not an address. */
export function canonicalIp(text: string): string {
  const ip = parseIp(text);
  return ip ? formatIp(ip) : text;
}

/**
 * The block a limiter counts an address under: an IPv4 address alone, an IPv6 address by its /64.
 * One IPv6 subscriber is handed a /64 or more, so counting single IPv6 addresses would give one
 * client 2^64 fresh counters.
 */
export function addressBlock(text: string): string {
  const ip = parseIp(text);
  if (!ip) return text;
  if (ip.family === 4) return formatIp(ip);
  return `${formatIp({ family: 6, bytes: [...ip.bytes.slice(0, 8), ...Array<number>(8).fill(0)] })}/64`;
}

function within(ip: IpAddress, cidr: Cidr): boolean {
  if (ip.family !== cidr.family) return false;
  for (let bit = 0; bit < cidr.prefix; bit += 8) {
    const bits = Math.min(8, cidr.prefix - bit);
    const mask = (0xff << (8 - bits)) & 0xff;
    if ((ip.bytes[bit / 8]! & mask) !== (cidr.bytes[bit / 8]! & mask)) return false;
  }
  return true;
}

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
