// A request refused before its body was read (too large, a type or coding no route takes) is
// answered at once, but its connection is not closed at once: a client that is still sending
// would meet a reset instead of the answer, and most clients only read once they have sent
// everything. So the rest of the body is read and thrown away, within bounds, and the connection
// is closed when it ends ("lingering close", as nginx calls it). Both transports drive this.

/**
 * How much of a refused body is read and dropped, as a multiple of the body limit: a client that
 * sent a few times too much still reads its 413, while one that never stops costs a bounded read
 * (8 MiB at the default limit, read at memory speed and never kept).
 */
export const LINGER_BODY_FACTOR = 8;
/**
 * How long a refused request may keep its connection: enough for the rest of the body at modest
 * bandwidth, and short enough that a client which stops sending cannot hold the socket (nginx
 * lingers 30 s at most).
 */
export const LINGER_SECONDS = 10;

/** Whether a request announces a body that has yet to arrive. */
export function bodyPending(headers: Record<string, string>): boolean {
  const declared = headers['content-length'];
  return (declared !== undefined && declared !== '0') || headers['transfer-encoding'] !== undefined;
}

/**
 * The bytes of one refused request's body still to be dropped, counted down as they arrive.
 * `drop` answers false once the bound is passed: the connection is then cut.
 */
export class DiscardBudget {
  private left: number;

  constructor(maxBodyBytes: number) {
    this.left = LINGER_BODY_FACTOR * maxBodyBytes;
  }

  drop(bytes: number): boolean {
    this.left -= bytes;
    return this.left >= 0;
  }
}
