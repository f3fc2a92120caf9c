// Where an engine is: a Unix socket path (a local engine, private to this user) or tcp://host:port
// and tls://host:port (an engine node elsewhere, every call proving the shared secret), and the
// gRPC target each becomes.

export type EngineAddress = { path: string } | { host: string; port: number; tls: boolean };

export function parseEngineAddress(text: string): EngineAddress {
  const m = /^(tcp|tls):\/\/(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(text);
  if (!m) return { path: text };
  return { host: m[2]!.replace(/^\[|\]$/g, ''), port: Number(m[3]), tls: m[1] === 'tls' };
}

export function formatEngineAddress(host: string, port: number, secure: boolean): string {
  return `${secure ? 'tls' : 'tcp'}://${hostPort(host, port)}`;
}

/** host:port, an IPv6 host in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export function grpcTarget(where: EngineAddress): string {
  return 'path' in where ? `unix:${where.path}` : hostPort(where.host, where.port);
}
