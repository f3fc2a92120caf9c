// Internet addresses as every layer reads them: parsed strictly, written one way (RFC 5952 for IPv6,
// an IPv4-mapped IPv6 address as IPv4) so that one host is one key whichever way its address was
// spelled, counted in blocks (an IPv6 host by its /64), and told apart from this machine's own.
import net from 'node:net';

export interface IpAddress {
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
export function parseIp(text: string): IpAddress | null {
  if (text.includes(':')) {
    const bytes = parseIpv6(text);
    if (!bytes) return null;
    return isV4Mapped(bytes) ? { family: 4, bytes: bytes.slice(12) } : { family: 6, bytes };
  }
  const bytes = parseIpv4(text);
  return bytes && { family: 4, bytes };
}

export function formatIp({ family, bytes }: IpAddress): string {
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

/** Whether `ip` lies in the block `cidr`. */
export function within(ip: IpAddress, cidr: Cidr): boolean {
  if (ip.family !== cidr.family) return false;
  for (let bit = 0; bit < cidr.prefix; bit += 8) {
    const bits = Math.min(8, cidr.prefix - bit);
    const mask = (0xff << (8 - bits)) & 0xff;
    if ((ip.bytes[bit / 8]! & mask) !== (cidr.bytes[bit / 8]! & mask)) return false;
  }
  return true;
}

/**
 * Whether a host is this machine's own: 127.0.0.0/8, ::1 (an IPv4-mapped loopback too) or the name
 * localhost, what only a local process can reach.
 */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const ip = net.isIP(h) ? parseIp(h) : null;
  if (!ip) return false;
  return ip.family === 4 ? ip.bytes[0] === 127 : ip.bytes.every((b, i) => b === (i === 15 ? 1 : 0));
}
