// API key secrets created in this tab, kept in memory only so the playground can use them after the
// one-time display closes. A reload or sign-out forgets them; the server never shows them again.

export interface KnownSecret {
  id: string;
  name: string;
  prefix: string;
  secret: string;
}

const secrets = new Map<string, KnownSecret>();

export function rememberSecret(known: KnownSecret): void {
  secrets.set(known.id, known);
}

export function knownSecrets(): KnownSecret[] {
  return [...secrets.values()];
}

export function secretFor(id: string): string | undefined {
  return secrets.get(id)?.secret;
}

export function forgetSecrets(): void {
  secrets.clear();
}
