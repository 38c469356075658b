#!/usr/bin/env bash
# bench/opening.sh — how long an opening takes to place its pre-queue: USERS
# people enter before opensAt (over HTTP, bench/cmd/enterall), the opening
# is brought to a second ahead, and the instance's own log line "line
# opened ... took=" (the admitter's whole step: close, draw, place) is the
# figure. Run on Redis and on the embedded store, each with its own
# instance. bench/compare-opening.sh runs it on two commits in turns.
#
#   bench/opening.sh                  # USERS=100000 by default
#
# Prints one line per store: RESULT opening store=<redis|embedded> users=<n> placed=<n> took=<duration>,
# and, where the binary has `waitroom verify-draw`, what it says of the
# opening's published record (VERIFY store=<name> matches: ...).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

USERS=${USERS:-100000}
source bench/lib.sh # work, pids, free_port, wait_for, start_redis

go build -o "$work/waitroom" ./cmd/waitroom
go build -o "$work/jwts" ./bench/jwts
go build -o "$work/enterall" ./bench/cmd/enterall
secret=bench-secret-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
admin=bench-admin-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
"$work/jwts" -secret "$secret" -n "$USERS" >"$work/jwts.txt"

# one store: its own instance, USERS in the pre-queue, then the opening.
opening() { # name, then serve's store flags
  local name=$1 port base log=$work/$1.log at line
  shift
  port=$(free_port)
  base="http://127.0.0.1:$port"
  "$work/waitroom" serve --addr "127.0.0.1:$port" --auth-secret "$secret" --admin-token "$admin" \
    --log-level info "$@" >"$log" 2>&1 &
  pids+=($!)
  wait_for "$log" curl -sf "$base/readyz"
  at=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
  curl -sf -X PUT "$base/admin/v1/queues/open" -H "Authorization: Bearer $admin" \
    -d "{\"opensAt\":\"$at\",\"capacity\":10000000,\"paused\":true}" >/dev/null
  "$work/enterall" -jwts "$work/jwts.txt" -url "$base/api/v1/queues/open/entries" >/dev/null
  at=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)
  curl -sf -X PATCH "$base/admin/v1/queues/open" -H "Authorization: Bearer $admin" -d "{\"opensAt\":\"$at\"}" >/dev/null
  for _ in $(seq 1200); do
    line=$(grep -m1 'line opened' "$log" || true)
    [[ -n "$line" ]] && break
    sleep 0.1
  done
  [[ -n "$line" ]] || { echo "the opening did not happen within 2 min" >&2; tail -n 20 "$log" >&2; exit 1; }
  # Where the binary checks draws (issue 57), the record is checked too, as an outsider would.
  if "$work/waitroom" help 2>&1 | grep -q verify-draw; then
    echo "VERIFY store=$name $("$work/waitroom" verify-draw --addr "$base" --queue open 2>&1 | tr '\n' ' ')"
  fi
  echo "RESULT opening store=$name users=$USERS placed=$(sed -E 's/.*"placed":([0-9]+).*/\1/' <<<"$line") took=$(sed -E 's/.*"took":"([^"]+)".*/\1/' <<<"$line")"
}

start_redis
mkdir -p "$work/rdata"
opening redis --redis-url "redis://127.0.0.1:$rport/0" --redis-prefix "wropen$RANDOM:" --data-dir "$work/rdata"
mkdir -p "$work/data"
opening embedded --data-dir "$work/data"
