#!/usr/bin/env bash
# Redis's own CPU per call of enter.lua, status.lua and snapshot.lua, and the
# commands each runs inside Redis, at several commits in turns on one
# throwaway redis-server on a free loopback port, so machine noise shows
# (TestScriptCost in internal/queue/redisstore measures; docs/benchmarks.md
# has the figures).
#
# Usage: USERS=100000 ROUNDS=2 bench/scriptcost.sh TREE...   (default: this tree)
# A tree is a checkout with TestScriptCost's file in it, e.g.
#   git worktree add --detach /tmp/before ef7974c^
#   cp internal/queue/redisstore/scriptcost_test.go /tmp/before/internal/queue/redisstore/
#   bench/scriptcost.sh /tmp/before .
set -euo pipefail
export PATH="/usr/local/go/bin:$PATH"
[[ $# -gt 0 ]] || set -- "$(dirname "${BASH_SOURCE[0]}")/.."
users="${USERS:-100000}"
rounds="${ROUNDS:-2}"
tmp="$(mktemp -d)"
redis_pid=""
cleanup() { if [[ -n "$redis_pid" ]]; then kill "$redis_pid" 2>/dev/null || true; fi; rm -rf "$tmp"; }
trap cleanup EXIT

labels=()
for tree in "$@"; do
	label="$(git -C "$tree" rev-parse --short HEAD)$(git -C "$tree" diff --quiet HEAD -- ':!*scriptcost_test.go' || echo +dirty)"
	(cd "$tree" && go test -c -o "$tmp/$label.test" ./internal/queue/redisstore/)
	labels+=("$label")
done
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

echo "# $(date -u '+%F %H:%M UTC'), redis $(redis-server --version | sed -E 's/.*v=([^ ]+).*/\1/'), $users in line, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	for label in "${labels[@]}"; do
		WAITROOM_SCRIPT_COST_URL="redis://127.0.0.1:$port/0" WAITROOM_SCRIPT_COST_USERS="$users" \
			timeout 900 "$tmp/$label.test" -test.run '^TestScriptCost$' -test.v 2>&1 |
			sed -nE "s/.*COST (.*)/round $r $label: \1/p"
	done
done
echo "# done $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
