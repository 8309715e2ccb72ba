#!/usr/bin/env bash
# Webhooks end to end: start the receiver (main.go receive: it verifies
# Stripe-Signature with stripe-go and processes each event id once), serve
# examples/webhooks/payments.yaml pointed at it, with every wait a hundredth
# as long and a fixed seed, create payment intents (main.go pay), then ask
# the server with `scenariomock verify` that every delivery arrived, and
# the receiver that it processed each event exactly once despite the
# duplicates, the reordering, the dropped first attempts and the spoilt
# signatures.
#
#   examples/webhooks/run.sh          (from anywhere; .ci/run runs it)
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

# wait_for FILE: until FILE is non-empty, 30 s at most (a loaded CI machine
# may be slow to start a process).
wait_for() {
  for _ in $(seq 300); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

echo "--- build scenariomock and the example (its own module: vet it too)"
(cd "$root" && go build -o "$work/scenariomock" .)
(cd "$here" && go vet ./... && go build -o "$work/example" .)
sm="$work/scenariomock"
"$sm" validate "$here/payments.yaml"

echo "--- the receiver"
"$work/example" receive -addr-file "$work/receiver.addr" > "$work/receiver.out" &
receiver_pid=$!
pids+=("$receiver_pid")
wait_for "$work/receiver.addr" || { echo "the receiver did not start"; exit 1; }
sed "s|http://127.0.0.1:4242/webhooks|http://$(cat "$work/receiver.addr")/webhooks|" "$here/payments.yaml" > "$work/payments.yaml"

echo "--- serve it, --time-scale 0.01 --seed 7"
"$sm" serve --addr 127.0.0.1:0 --watch=false --time-scale 0.01 --seed 7 "$work/payments.yaml" 2> "$work/mock.log" &
pids+=("$!")
addr=""
for _ in $(seq 300); do
  addr=$(sed -n 's/.*msg=ready addr=\([^ ]*\).*/\1/p' "$work/mock.log")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "scenariomock did not start:"; cat "$work/mock.log"; exit 1; }
export SCENARIOMOCK_ADDR="http://$addr"

fail() { echo "--- the server's log:"; cat "$work/mock.log"; exit 1; }

echo "--- five payment intents, each retried with its Idempotency-Key"
"$work/example" pay -addr "$SCENARIOMOCK_ADDR" -n 5 || fail

echo "--- verify the deliveries"
v() { echo "verify $(printf '%q ' "$@")"; "$sm" verify "$@" || fail; }
# Five of each type at least (duplicates are deliveries of their own),
# each accepted within its schedule, and none left undelivered.
v --webhook shop --type payment_intent.created --delivered --at-least 5 --attempts-at-most 5 --within 60s
v --webhook shop --type payment_intent.succeeded --delivered --at-least 5 --attempts-at-most 5 --within 60s
v --webhook shop --undelivered --none --within 60s

echo "--- what the receiver saw"
kill -TERM "$receiver_pid"
wait "$receiver_pid"
cat "$work/receiver.out"
# Ten events (created and succeeded of five payments), each processed once.
grep -q '"processed":10,' "$work/receiver.out" || { echo "the receiver did not process exactly 10 events"; fail; }
# The faults happened: duplicates acknowledged, spoilt signatures refused.
grep -q '"duplicates":[1-9]' "$work/receiver.out" || { echo "no duplicate reached the receiver"; fail; }
grep -q '"refused":[1-9]' "$work/receiver.out" || { echo "no spoilt signature reached the receiver"; fail; }
echo "ok: examples/webhooks"
