// Talking to the server: every reply read once into status, headers and body; error replies put
// into the words the API itself chose; the console's own calls signed with the session's CSRF token.

export const SESSION_ENDED = 'Your console session has ended; sign in again.';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface Reply {
  status: number;
  ok: boolean;
  headers: Headers;
  /** Parsed JSON, or the raw text when the body is not JSON (e.g. /metrics). */
  body: unknown;
}

// The CSRF token lives only here, in memory: a reload asks the server for it again (GET
// /console/session), so it is never written to storage or a URL.
let csrf: string | null = null;
let sessionEnded: (() => void) | null = null;

export function setCsrf(token: string | null): void {
  csrf = token;
}

/** What to do when the server says the console session is gone. */
export function onSessionEnded(handler: () => void): void {
  sessionEnded = handler;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export async function send(url: string, init: RequestInit = {}): Promise<Reply> {
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch {
    throw new ApiError('The server could not be reached. Check the connection and try again.', 0);
  }
  const text = await res.text();
  let body: unknown = text;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: keep the text.
    }
  }
  return { status: res.status, ok: res.ok, headers: res.headers, body };
}

/** The API's own explanation of a failed reply, in one sentence or a few joined. */
export function describeError(reply: Reply): string {
  const detail = isRecord(reply.body) ? reply.body.detail : undefined;
  let message: string;
  if (Array.isArray(detail)) {
    message = detail
      .map((item: unknown) => {
        if (!isRecord(item)) return String(item);
        const loc = Array.isArray(item.loc) ? item.loc : [];
        const where = loc.length > 0 ? String(loc[loc.length - 1]) : '';
        const msg = typeof item.msg === 'string' ? item.msg : 'is not valid';
        return where ? `${where}: ${msg}` : msg;
      })
      .join('; ');
  } else if (isRecord(detail) && typeof detail.message === 'string') {
    message = detail.message;
  } else if (typeof detail === 'string') {
    message = detail;
  } else {
    message = `The server answered with status ${reply.status}.`;
  }
  if (reply.status === 429) {
    const after = reply.headers.get('retry-after');
    if (after) message += /^\d+$/.test(after) ? ` Try again in ${after} s.` : ` Try again after ${after}.`;
  }
  return message;
}

/** A console API call: JSON in and out, CSRF header on, a 401 ends the session everywhere. */
export async function consoleApi<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', 'X-Arbitra-CSRF': csrf ?? '' };
  const init: RequestInit = { method, headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const reply = await send(path, init);
  if (reply.status === 401) {
    sessionEnded?.();
    throw new ApiError(SESSION_ENDED, 401);
  }
  if (!reply.ok) throw new ApiError(describeError(reply), reply.status);
  // Trusted to match the documented shape: the server and this page ship together.
  return reply.body as T;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
