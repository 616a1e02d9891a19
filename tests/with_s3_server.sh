#!/usr/bin/env bash
# Runs a command against a real S3-compatible server on loopback: moto's
# server mode (moto[server], in the build's Python venv), started on a free
# port, with BUCKET made, and stopped after, whatever the command did:
#   AWS_ENDPOINT_URL_S3=http://127.0.0.1:PORT  AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
#   (testing / testing)  AWS_DEFAULT_REGION=us-east-1  AWS_EC2_METADATA_DISABLED=true
# are exported to it. Exit status: the command's, or 77 (ctest's skip) when
# there is no moto_server beside PYTHON.
#
# Usage: tests/with_s3_server.sh PYTHON BUCKET COMMAND [ARG...]
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help || $# -lt 3 ]]; then
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"
  [[ $# -ge 3 ]] || exit 2
  exit 0
fi
python=$1 bucket=$2
shift 2
moto=$(dirname "$python")/moto_server
if [[ ! -x $moto ]]; then
  echo "with_s3_server: no $moto (pip install 'moto[server]'): skipped" >&2
  exit 77
fi
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$moto" -H 127.0.0.1 -p "$port" > "$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
# moto's server imports for seconds (much longer on a loaded machine): wait
# up to 120 s for it to answer.
ready=0
for _ in $(seq 1200); do
  if "$python" - "$bucket" <<'PY' 2>/dev/null; then ready=1; break; fi
import os, sys, urllib.request
req = urllib.request.Request(os.environ["AWS_ENDPOINT_URL_S3"] + "/" + sys.argv[1], method="PUT")
urllib.request.urlopen(req, timeout=2)
PY
  if ! kill -0 $server 2>/dev/null; then
    echo "with_s3_server: moto_server exited:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
if ((!ready)); then
  echo "with_s3_server: moto_server on port $port did not answer in 120 s:" >&2
  cat "$log" >&2
  exit 1
fi
"$@"
