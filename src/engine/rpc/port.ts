// The engine's TCP port: this module accepts the connections and hands them to the gRPC server
// (grpc-js's connection injector), so that the bounds on them hold before anyone has proved
// anything. A connection beyond the bounds is closed as it is accepted; one that has carried no
// proven call a few seconds after it opened is closed (a probe's or a stranger's: an API node
// proves itself on its first call); one whose caller failed a proof is closed once the refusal is
// on its way, so whatever the caller still sends is never read.
import net from 'node:net';
import { addressBlock } from '../../addresses.js';

export interface PortBounds {
  /** Connections at once, from everyone. */
  connections: number;
  /** Connections at once from one address (an IPv6 host by its /64: addressBlock). */
  perAddress: number;
  /** How long a connection may stay open without a proven call. */
  proveWithinMs: number;
}

export const PORT_BOUNDS: PortBounds = {
  // An API node holds one connection per HTTP worker and one for its primary to each engine: 1024
  // serves 16 nodes of 63 workers, and each idle HTTP/2 connection costs the engine tens of KB.
  connections: 1024,
  // --workers defaults to the cores of the API node's machine; config.ts refuses --engines with
  // more workers than this allows.
  perAddress: 256,
  proveWithinMs: 10_000,
};

/** A refused caller's status goes out before its connection closes; past this it is cut regardless. */
const CLOSE_GRACE_MS = 1_000;

/** A connection as a gRPC call reports it (getConnectionInfo). */
export interface Peer {
  remoteAddress?: string;
  remotePort?: number;
}

const peerKey = (address: string | undefined, port: number | undefined): string => `${address ?? ''}|${port ?? ''}`;

/**
 * Resets a connection (RST: nothing more is read from it), or destroys it while its shutdown is
 * under way. libuv refuses to reset a stream that is shutting down (EINVAL), yet Node marks the
 * handle closing all the same, so it is never closed: the socket never emits 'close', and at exit
 * the process spins in its handle cleanup forever (seen as a CI test file that never ended; the
 * stuck handle was shut, not closing). A shutdown is under way from end() until 'finish'.
 */
export function reset(socket: Pick<net.Socket, 'writableEnded' | 'writableFinished' | 'destroy' | 'resetAndDestroy'>): void {
  if (socket.writableEnded && !socket.writableFinished) socket.destroy();
  else socket.resetAndDestroy();
}

export class EnginePort {
  private readonly open = new Map<string, { socket: net.Socket; timer: NodeJS.Timeout | null }>();
  private readonly perAddress = new Map<string, number>();
  private server: net.Server | null = null;

  constructor(private readonly bounds: PortBounds = PORT_BOUNDS) {}

  /** Listens on host:port, handing each connection within the bounds to `inject`; resolves with the port. */
  listen(host: string, port: number, inject: (socket: net.Socket) => void): Promise<number> {
    const server = net.createServer((socket) => this.accept(socket, inject));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port }, () => {
        server.off('error', reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  }

  private accept(socket: net.Socket, inject: (socket: net.Socket) => void): void {
    // A socket error (a reset, a write after our close) ends the connection and nothing else.
    socket.on('error', () => {});
    const address = addressBlock(socket.remoteAddress ?? '');
    const fromAddress = this.perAddress.get(address) ?? 0;
    if (this.open.size >= this.bounds.connections || fromAddress >= this.bounds.perAddress) {
      socket.destroy();
      return;
    }
    const key = peerKey(socket.remoteAddress, socket.remotePort);
    const timer = setTimeout(() => reset(socket), this.bounds.proveWithinMs).unref();
    this.open.set(key, { socket, timer });
    this.perAddress.set(address, fromAddress + 1);
    socket.once('close', () => {
      const entry = this.open.get(key);
      if (entry?.timer) clearTimeout(entry.timer);
      this.open.delete(key);
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    });
    inject(socket);
  }

  /** The connection carried a proven call: it stays. */
  proved(peer: Peer): void {
    const entry = this.open.get(peerKey(peer.remoteAddress, peer.remotePort));
    if (entry?.timer) {
      clearTimeout(entry.timer);
      entry.timer = null;
    }
  }

  /** The connection's caller failed a proof: closed once the refusal is written. */
  cut(peer: Peer): void {
    const socket = this.open.get(peerKey(peer.remoteAddress, peer.remotePort))?.socket;
    if (!socket) return;
    // After the HTTP/2 session has written the refusal, which it does on the next turn of the loop:
    // the refusal flushed, the connection is reset, so that nothing more is read from it.
    setImmediate(() => socket.end(() => reset(socket)));
    setTimeout(() => reset(socket), CLOSE_GRACE_MS).unref();
  }

  /**
   * Stops listening, once every connection has ended. The gRPC server ends those it holds sessions
   * on (resetting a socket under a live HTTP/2 session would leave its handle open); the rest (a
   * TLS handshake not finished, say) are reset here after a moment.
   */
  close(): Promise<void> {
    setTimeout(() => {
      for (const { socket } of this.open.values()) {
        reset(socket);
        // A session made after the drain (a TLS handshake that finished late on a loaded machine)
        // can keep its handle past the reset: it must not hold a stopping process open.
        socket.unref();
      }
    }, CLOSE_GRACE_MS / 10).unref();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
