#!/usr/bin/env node
// The image's HEALTHCHECK: exit 0 when the server in this container answers /health with 200. It
// asks ARBITRA_PORT on loopback unless ARBITRA_HOST names one address to listen on.
const host = process.env.ARBITRA_HOST;
const address = !host || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
const url = `http://${address}:${process.env.ARBITRA_PORT || 8080}/health`;
fetch(url, { signal: AbortSignal.timeout(4000) }).then(
  (res) => process.exit(res.status === 200 ? 0 : 1),
  () => process.exit(1),
);
