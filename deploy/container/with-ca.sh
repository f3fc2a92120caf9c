#!/bin/sh
# Runs a build step that reaches the network (npm ci, a baked model's download) so that it also
# works behind a TLS-inspecting proxy: the build secret `ca` (`--secret id=ca,src=BUNDLE.pem`),
# when given, is the certificate bundle Node, npm and pip trust. It is mounted for the step alone
# and never stored in the image.
if [ -s /run/secrets/ca ]; then
  export NODE_EXTRA_CA_CERTS=/run/secrets/ca PIP_CERT=/run/secrets/ca
fi
exec "$@"
