// What the transports share: the application they serve and the server they hand back. The
// chooser (server.ts) sits above both adapters and picks one.
import type { HttpImplementation, HttpRequest, WireResponse } from '../api/route.js';

/**
 * How long a stopping server lets requests in flight run before it closes their connections. A
 * decision queued behind others on a 2-core CPU can take tens of seconds, and 30 s is what
 * Kubernetes waits after SIGTERM by default.
 */
export const DEFAULT_SHUTDOWN_GRACE_SECONDS = 30;

/** What a transport needs from the application: the pipeline below the socket. */
export interface HttpApp {
  /** Bodies larger than this are refused with 413 before they are buffered. */
  maxBodyBytes: number;
  /** A fresh request: id, start time, params empty, body empty until the transport fills it. */
  begin(init: { method: string; url: string; headers: Record<string, string>; ip: string; signal: AbortSignal }): HttpRequest;
  /** Checks the declared body before any byte is read; a WireResponse means refuse the request with it. */
  precheck(req: HttpRequest): WireResponse | null;
  /** Renders a 413 for a body that outgrew the limit while streaming. */
  tooLarge(req: HttpRequest): WireResponse;
  /** Routes, runs and renders; never throws. */
  handle(req: HttpRequest): Promise<WireResponse>;
}

export interface RunningServer {
  implementation: HttpImplementation;
  /** The bound port (useful when asked for port 0). */
  port: number;
  /** Stops accepting, lets requests in flight finish for up to `graceMs` (default DEFAULT_SHUTDOWN_GRACE_SECONDS), then closes every connection. */
  close(graceMs?: number): Promise<void>;
}
