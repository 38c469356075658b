# bench/lib.sh — what the load scripts share (sourced, not run): a work
# directory removed at exit with every process started into pids, a free
# loopback port, a wait for a server, and a Redis of the script's own.
#
#   source "$(dirname "$0")/lib.sh"      # sets work and pids, traps EXIT

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Below the kernel's ephemeral range (32768 and up on Linux): a port there
# may be taken, between the choice and the bind, by any outgoing connection
# (wrk's, the instance's to Redis), and was (a run ended "address already in
# use").
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

# waits up to 30 s for a command to succeed; a server that could not start (its
# port taken meanwhile by another process) ends the run with its log.
wait_for() { # log command...
  local log=$1 i
  shift
  for i in $(seq 300); do "$@" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "not up within 30 s: $*" >&2
  tail -n 20 "$log" >&2
  exit 1
}

# start_redis starts a redis-server in $work on a free port, sets rport and
# redis_pid, and waits for its PING. A port free when chosen may be taken
# before Redis binds it (the machine is shared): a server that exits at once
# is started again on another, up to three times.
start_redis() {
  command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
  local try i
  for try in 1 2 3; do
    rport=$(free_port)
    redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
    redis_pid=$!
    for i in $(seq 300); do
      redis-cli -p "$rport" ping >/dev/null 2>&1 && break
      kill -0 "$redis_pid" 2>/dev/null || break
      sleep 0.1
    done
    redis-cli -p "$rport" ping >/dev/null 2>&1 && break
  done
  pids+=("$redis_pid")
  wait_for "$work/redis.log" redis-cli -p "$rport" ping
}
