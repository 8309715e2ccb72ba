#!/usr/bin/env bash
# A mock in front of a real upstream, end to end: serve the sandbox (our
# own scenariomock standing in for a provider), then a mock in front of it
# that proxies charges with the lost answer (the upstream processed it, the
# client's connection is reset), forwards everything else
# (--proxy-unmatched) and records what it forwarded (--record). A client
# retries its charge with the same Idempotency-Key; `scenariomock verify`
# asks the sandbox that it saw one charge, and the mock what it proxied.
# Then the recording is validated and served, and answers as the sandbox did.
#
#   examples/proxy/run.sh          (from anywhere; .ci/run runs it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# start NAME ARGS...: serve in the background, log in $work/NAME.log, and
# set $addr to the address it listens on (30 s at most: CI is loaded).
start() {
  local name=$1
  shift
  "$sm" serve --addr 127.0.0.1:0 --watch=false "$@" 2> "$work/$name.log" &
  pids+=("$!")
  addr=""
  for _ in $(seq 300); do
    addr=$(sed -n 's/.*msg=ready addr=\([^ ]*\).*/\1/p' "$work/$name.log")
    [ -n "$addr" ] && return 0
    sleep 0.1
  done
  echo "$name did not start:"
  cat "$work/$name.log"
  exit 1
}
fail() {
  for f in "$work"/*.log; do echo "--- $f"; cat "$f"; done
  exit 1
}

echo "--- build scenariomock"
(cd "$root" && go build -o "$work/scenariomock" .)
sm="$work/scenariomock"
"$sm" validate "$here/sandbox.yaml" "$here/proxy.yaml"

echo "--- the sandbox (the upstream)"
start sandbox "$here/sandbox.yaml"
upstream="http://$addr"
sed "s|http://127.0.0.1:4243|$upstream|" "$here/proxy.yaml" > "$work/proxy.yaml"

echo "--- the mock in front of it: proxy, spy on the rest, record"
start mock --proxy-unmatched "$upstream" --record "$work/recorded" "$work/proxy.yaml"
mock="http://$addr"

echo "--- a charge whose answer is lost, then its retry with the same key"
charge() {
  curl -sS --max-time 10 -X POST "$mock/v1/charges" -H 'Idempotency-Key: order-7' \
    -H 'Authorization: Bearer sk_test_example_secret_0001' -H 'X-Debug: 1' -d 'amount=2000'
}
if out=$(charge 2>&1); then echo "the first attempt got an answer: $out"; fail; fi
echo "first attempt: $out"
out=$(charge) || fail
echo "retry: $out"
case "$out" in *'"id":"ch_1"'*) ;; *) echo "the retry did not get the stored charge ch_1"; fail ;; esac

echo "--- a request no route mocks goes to the sandbox"
live=$(curl -sS --max-time 10 "$mock/v1/balance" -H 'Authorization: Bearer sk_test_example_secret_0001') || fail
echo "$live"

echo "--- verify"
v() { echo "verify $(printf '%q ' "$@")"; "$sm" verify "$@" || fail; }
v --addr "$upstream" --route 'create charge' --count 1   # one charge reached the sandbox, not two
v --addr "$mock" --proxied --count 2                      # the charge and the balance were proxied
v --addr "$mock" --idempotency replayed --count 1         # the retry never reached the sandbox
v --addr "$mock" --proxied --path /v1/refunds --none      # nothing else reached the upstream

echo "--- stop the mock: it writes the recording"
kill -INT "${pids[1]}"
wait "${pids[1]}" || fail
"$sm" validate "$work/recorded" || fail
if grep -rq sk_test_example_secret_0001 "$work/recorded"; then echo "the recording holds the token"; fail; fi

echo "--- serve the recording: the same balance, without the sandbox"
kill -TERM "${pids[0]}"
wait "${pids[0]}" || true
start replay "$work/recorded"
replayed=$(curl -sS --max-time 10 "http://$addr/v1/balance") || fail
[ "$replayed" = "$live" ] || { echo "replayed $replayed, live $live"; fail; }
echo "ok: examples/proxy"
