// Which HTTP front serves, and where its code came from. The uWS binary is a third party's republish
// that could not be matched to an upstream release (docs/security.md), so the start-up line and
// /health name it with the digest of the file actually loaded, for an operator to compare.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { HttpImplementation } from '../api/route.js';
import type { HttpFront } from '../api/schemas/health.js';
import { uwsBinary } from './uws-server.js';

const described = new Map<HttpImplementation, HttpFront>();

/** The front's package and, for uWS, its binary's SHA-256 (read once per process: 7 MB, a few ms). */
export function describeFront(implementation: HttpImplementation): HttpFront {
  let front = described.get(implementation);
  if (!front) {
    if (implementation === 'node') front = { implementation, package: `node:http@${process.versions.node}`, binary_sha256: null };
    else {
      const { version, file } = uwsBinary();
      front = { implementation, package: `uwebsockets@${version}`, binary_sha256: createHash('sha256').update(fs.readFileSync(file)).digest('hex') };
    }
    described.set(implementation, front);
  }
  return front;
}

/** The front as the start-up line names it: "uws (uwebsockets@3.0.6, binary sha256 f4fa5d7b…e665)". */
export function frontText(front: HttpFront): string {
  const digest = front.binary_sha256 ? `, binary sha256 ${front.binary_sha256.slice(0, 8)}…${front.binary_sha256.slice(-4)}` : '';
  return `${front.implementation} (${front.package}${digest})`;
}
