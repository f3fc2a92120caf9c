// Why a download or a hub request failed, in words. fetch (undici) says only "fetch failed" and puts
// the system's reason (ECONNREFUSED, ENOTFOUND, a TLS failure) in `cause`.
import { inspect } from 'node:util';

export function failureReason(err: unknown): string {
  const cause = err instanceof Error ? err.cause : undefined;
  if (cause instanceof Error) return cause.message;
  if (typeof cause === 'string') return cause;
  return err instanceof Error ? err.message : inspect(err);
}
