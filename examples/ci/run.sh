#!/usr/bin/env bash
# A CI job against scenariomock, end to end: build it, serve
# examples/ci/payments.yaml (answers lost after processing, a transfer
# slower than the client's timeout), run the client (main.go, its own
# module: go-retryablehttp with the same Idempotency-Key on every retry),
# then ask the server with `scenariomock verify` what it received. Any
# failure fails the job; the server is stopped however the script ends.
#
#   examples/ci/run.sh          (from anywhere; .ci/run runs it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "--- build scenariomock"
(cd "$root" && go build -o "$work/scenariomock" .)
sm="$work/scenariomock"
"$sm" validate "$here/payments.yaml"

echo "--- serve examples/ci/payments.yaml on a free port"
"$sm" serve --addr 127.0.0.1:0 --watch=false "$here/payments.yaml" 2> "$work/mock.log" &
server_pid=$!
addr=""
for _ in $(seq 300); do # 30 s: a loaded CI machine may be slow to start it
  addr=$(sed -n 's/.*msg=ready addr=\([^ ]*\).*/\1/p' "$work/mock.log")
  [ -n "$addr" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$addr" ]; then
  echo "scenariomock did not start:"; cat "$work/mock.log"; exit 1
fi
export SCENARIOMOCK_ADDR="http://$addr" # verify and requests read it as --addr
echo "serving at $SCENARIOMOCK_ADDR"

fail() { echo "--- the server's journal:"; "$sm" requests || true; echo "--- the server's log:"; cat "$work/mock.log"; exit 1; }

echo "--- the client (its own module: vet it too, the main module's go vet ./... skips it)"
(cd "$here" && go vet ./... && go run . -addr "$SCENARIOMOCK_ADDR" -timeout 1s) || fail

echo "--- verify what the server received: checks.yaml, and a JUnit report for the CI system"
"$sm" verify --file "$here/verify/checks.yaml" --junit "$work/verify.xml" || fail
grep -c '<testcase ' "$work/verify.xml" | sed 's/^/testcases in the JUnit report: /'
# One check alone, as a flag: the retry of the payment was no second run.
"$sm" verify --route "create payment" --count 2 || fail

echo "--- what the server received"
"$sm" requests
echo "ok: examples/ci"
