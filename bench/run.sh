#!/usr/bin/env bash
# bench/run.sh — waitroom's benchmarks in one command (docs/benchmarks.md).
#
# Starts a throwaway redis-server and PostgreSQL on free loopback ports (a
# compact copy of scripts/test.sh's servers; installs redis-server,
# postgresql, wrk and nginx from Debian packages when missing), runs the harness
# (go run ./bench/cmd/bench: the herd, a stock sold out, the hot paths under
# wrk, admission accuracy, Redis memory, the front document through nginx's
# cache) against the program booted in
# process, writes the figures into docs/benchmarks.md and the SVG charts into
# docs/bench/, and stops the servers. Every load is bounded; the whole run takes
# a few minutes a section, the herd's capacity sweep 3 more (cmd/bench's
# -limit stops everything after 30 minutes).
#
#   bench/run.sh                       # the real run; rewrites docs/benchmarks.md
#   bench/run.sh --short               # seconds; writes into a temp dir, prints it, deletes it
#   bench/run.sh --short --out DIR     # the same, kept in DIR (DIR/benchmarks.md, DIR/bench/*.svg)
#   bench/run.sh --million             # a million in line, open loop (several
#                                      # minutes); rewrites its section only
#   bench/run.sh -sections herd,memory # a subset (flags go to cmd/bench): herd,
#                                      # degrade, noshow, soldout, hot, accuracy,
#                                      # memory, gateway, front, million, bots,
#                                      # lanes, codes, estimates, ready
#   bench/run.sh -sections herd        # about five minutes: a sweep of fixed rates
#                                      # for what the backend bears (3 minutes,
#                                      # ~9 points of 20 s), then the three modes
#                                      # read against it (docs/benchmarks.md §1);
#                                      # -herd-capacity 87 skips the sweep,
#                                      # -herd-sweep-only runs only it
#   bench/run.sh -sections front       # three minutes: 100,000 in line, pages on
#                                      # the front document through deploy/nginx.conf
#                                      # against exact polls (docs/benchmarks.md §6)
#   bench/run.sh -sections soldout     # a minute: 500 units, 5,000 users, with
#                                      # admitPerUnit 1 and 0 (docs/benchmarks.md, Sold out)
#   bench/run.sh -sections bots        # about three minutes: an opening for 2,000
#                                      # people while a bot farm takes 6,000 places,
#                                      # with the signals, without them, without the
#                                      # bots (docs/security.md, Likely bots);
#                                      # -bots-runs before: one of the three runs
#   bench/run.sh -sections lanes,codes # under two minutes (issue 53): lanes members
#                                      # (0.3, by JWT claim) and public (0.7) at 100/s,
#                                      # 1,500 members over 25 s and 5,000 of the
#                                      # public over 60 s: shares, positions, estimates;
#                                      # then 100,000 codes in one upload, three times,
#                                      # on Redis and on the embedded store
#                                      # (docs/benchmarks.md, 1e)
#   bench/run.sh -sections estimates   # 9–10 minutes (issue 54): the
#                                      # estimate shown at joining against the
#                                      # wait realised, in five scenarios of a
#                                      # crowd arriving over time (the herd's
#                                      # modes at a fixed 100/s and the burst
#                                      # adaptive, 30% no-shows, a slowdown, two
#                                      # phases, a 2-minute pause): coverage of
#                                      # the range, realised ÷ point (docs/
#                                      # benchmarks.md, 1f); -estimates-before
#                                      # FILE sets beside it the -json of a run
#                                      # on the code before the issue
#   bench/run.sh -sections ready       # about two minutes (issue 55): three
#                                      # instances on one Redis, a queue at 500/s
#                                      # with notifyOnReady, 30,000 signed users
#                                      # over 60 s polling until READY, a receiver
#                                      # keeping each entry.ready id: missing,
#                                      # duplicates, lag (docs/benchmarks.md, 1g)
#   bench/run.sh --chaos               # the chaos run (cmd/chaos): kills Redis,
#                                      # an instance, stops PostgreSQL; then the
#                                      # Redis Cluster failover run (six nodes);
#                                      # prints Markdown
#   bench/run.sh --chaos -on-store-error admit   # (or wait; --short too) the
#                                      # store-error run instead: the gateway with
#                                      # that setting, Redis killed 10 s under load
#   bench/run.sh --check               # the fairness check (cmd/check): 100 histories
#                                      # under each kind of fault, checked with Porcupine
#   bench/run.sh --fuzz [--short]      # the gateway's differential fuzzer (cmd/difffuzz):
#                                      # 1,000,000 requests a backend (20,000 short)
#                                      # straight to Jetty, Flask, Express and through
#                                      # the gateway; prints docs/security.md's table
#   bench/run.sh --fuzz -front nginx   # the same through nginx asking the decision,
#                                      # each answer's class against waitroom proxy's
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH:/usr/sbin:/usr/bin:/sbin:/bin"

say() { printf '== %s\n' "$*" >&2; }
die() { printf '== ERROR: %s\n' "$*" >&2; exit 1; }

short=0
out="" # --out: where the report and charts go instead of docs/ (or the short run's temp dir)
chaos=0
check=0
fuzz=0
args=()
invoked="bench/run.sh${*:+ $*}" # named in the report as the command that reproduces it
while (($#)); do
	case "$1" in
	--short | -short) short=1 ;;
	--million) args+=(-sections million -limit 30m) ;;
	--chaos) chaos=1 ;;
	--check) check=1 ;;
	--fuzz) fuzz=1 ;;
	--out | -out) out="${2:?--out needs a directory}"; shift ;;
	--out=* | -out=*) out="${1#*=}" ;;
	*) args+=("$1") ;;
	esac
	shift
done
# Relative to where the script was called from, not the repository root.
[[ -z "$out" || "$out" == /* ]] || out="$OLDPWD/$out"

TMP="$(mktemp -d /tmp/waitroom-bench.XXXXXX)"
chmod 755 "$TMP"
REDIS_PID=""
PG_DATA=""
PG_USER=""
as_pg() { if [[ -n "$PG_USER" ]]; then runuser -u "$PG_USER" -- "$@"; else "$@"; fi; }
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n "$REDIS_PID" ]]; then kill "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; fi
	if [[ -n "$PG_DATA" ]]; then (cd "$TMP" && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w -t 10 stop) >/dev/null 2>&1 || true; fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ((fuzz)); then
	# No Redis or PostgreSQL: the gateway runs on the embedded line. The
	# backends come from Debian (a JDK, Jetty 9.4, Flask) and npm (Express,
	# pinned in tools/npm, as the test command installs them).
	warn() { printf '== WARNING: %s\n' "$*" >&2; }
	need=()
	command -v javac >/dev/null || need+=(default-jdk-headless)
	[[ -e /usr/share/java/jetty9-server.jar ]] || need+=(libjetty9-java)
	/usr/bin/python3 -c 'import flask' 2>/dev/null || need+=(python3-flask)
	command -v npm >/dev/null || need+=(npm)
	[[ " ${args[*]} " == *" nginx "* && ! -x /usr/sbin/nginx ]] && ! command -v nginx >/dev/null && need+=(nginx)
	if ((${#need[@]})); then
		say "installing ${need[*]}"
		sudo=()
		((EUID == 0)) || sudo=(sudo -n)
		"${sudo[@]}" apt-get -q update >&2
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${need[@]}" >&2
	fi
	# shellcheck source=scripts/npm-tools.sh
	source scripts/npm-tools.sh
	install_npm_tools >&2 || die "the npm tools of tools/npm could not be installed"
	requests=1000000
	((short)) && requests=20000
	go run ./bench/cmd/difffuzz -requests "$requests" "${args[@]}"
	exit
fi

find_pg_bin() {
	local d
	# shellcheck disable=SC2012
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		[[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return 0; }
	done
	return 1
}
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v wrk >/dev/null || missing+=(wrk)
# nginx is the gateway section's outside anchor (bench/gateway_anchors.go
# runs it with a config of its own in a temp dir, and stops it).
command -v nginx >/dev/null || missing+=(nginx)
# Caddy is the other deciding front of the same section (deploy/Caddyfile).
command -v caddy >/dev/null || missing+=(caddy)
find_pg_bin >/dev/null || missing+=(postgresql)
if ((${#missing[@]})); then
	sudo=()
	((EUID == 0)) || sudo=(sudo -n)
	say "installing ${missing[*]}"
	"${sudo[@]}" apt-get -q update >&2
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${missing[@]}" >&2
fi
PG_BIN="$(find_pg_bin)" || die "PostgreSQL not found under /usr/lib/postgresql/*/bin"

free_port() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 12000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}

rport="$(free_port)"
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$TMP" \
	--logfile "$TMP/redis.log" </dev/null >/dev/null 2>&1 &
REDIS_PID=$!
for _ in $(seq 100); do [[ "$(redis-cli -p "$rport" ping 2>/dev/null)" == PONG ]] && break; sleep 0.1; done
[[ "$(redis-cli -p "$rport" ping 2>/dev/null)" == PONG ]] || die "redis did not start"
export WAITROOM_TEST_REDIS_URL="redis://127.0.0.1:$rport/0"

if ((EUID == 0)); then
	if id -u postgres >/dev/null 2>&1; then PG_USER=postgres; else
		id -u waitroom-test >/dev/null 2>&1 ||
			useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin waitroom-test
		PG_USER=waitroom-test
	fi
	chown "$PG_USER" "$TMP"
fi
(cd "$TMP" && as_pg "$PG_BIN/initdb" -D "$TMP/pg" -A trust -U postgres -E UTF8 --locale=C --no-sync) >"$TMP/initdb.log" 2>&1 ||
	{ cat "$TMP/initdb.log" >&2; die "initdb failed"; }
cat >>"$TMP/pg/postgresql.conf" <<-CONF
	listen_addresses = '127.0.0.1'
	unix_socket_directories = '$TMP'
	max_connections = 200
	fsync = off
	synchronous_commit = off
	full_page_writes = off
CONF
if ((chaos)); then
	# The chaos run stops this PostgreSQL with -m immediate, a crash: a
	# commit must be in the WAL before it is acknowledged, or an order the
	# buyer was told of may be lost (synchronous_commit off loses up to
	# three wal_writer_delay of them, and the run then reports it).
	echo "synchronous_commit = on" >>"$TMP/pg/postgresql.conf"
fi
pport="$(free_port)"
PG_DATA="$TMP/pg"
(cd "$TMP" && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$TMP/pg.log" -o "-p $pport" -w -t 60 start) >/dev/null ||
	{ cat "$TMP/pg.log" >&2; die "postgres did not start"; }
export WAITROOM_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$pport/postgres?sslmode=disable"
say "redis $(redis-server --version | grep -o 'v=[0-9.]*'), $("$PG_BIN/postgres" --version), $(go version)"

if ((check)); then
	# It runs its own Redis (with an AOF) and waitroom instances in process;
	# --out is where failing histories go (the temp dir when not given).
	go run ./bench/cmd/check ${out:+-out "$out"} "${args[@]}"
elif ((chaos)); then
	# The chaos run stops and starts this PostgreSQL itself; it runs its own
	# Redis (with an AOF) and waitroom processes.
	pg_ctl_as="cd $TMP && ${PG_USER:+runuser -u $PG_USER -- }$PG_BIN/pg_ctl -D $PG_DATA"
	export WAITROOM_CHAOS_PG_STOP="$pg_ctl_as -m immediate -w -t 30 stop"
	export WAITROOM_CHAOS_PG_START="$pg_ctl_as -l $TMP/pg.log -o '-p $pport' -w -t 60 start"
	chaos_args=()
	((short)) && chaos_args=(-short -command "bench/run.sh --chaos --short")
	chaos_rc=0
	go run ./bench/cmd/chaos "${chaos_args[@]}" "${args[@]}" || chaos_rc=$?
	# The store-error run (-on-store-error) is one run of its own.
	[[ " ${args[*]} " == *" -on-store-error "* ]] && exit "$chaos_rc"
	# Then the Redis Cluster failover (bench/failover.go): six redis-servers
	# of its own, a primary killed with a replica, then one without. The
	# test command runs its short form; this is the long one.
	say "the cluster failover run"
	long=1
	((short)) && long=""
	WAITROOM_FAILOVER_LONG="$long" WAITROOM_FAILOVER_REPORT="$TMP/failover.md" \
		go test -count=1 -timeout 10m -run '^TestClusterFailover$' -v ./bench/ >&2
	cat "$TMP/failover.md"
	exit "$chaos_rc"
elif ((short)); then
	dest="${out:-$TMP/out}"
	go run ./bench/cmd/bench -short -profile=false -doc "$dest/benchmarks.md" -svg "$dest/bench" \
		-command "$invoked" "${args[@]}"
	cat "$dest/benchmarks.md"
	[[ -n "$out" ]] || say "the charts were in a temp dir, now deleted: bench/run.sh --short --out DIR keeps them"
elif [[ -n "$out" ]]; then
	go run ./bench/cmd/bench -doc "$out/benchmarks.md" -svg "$out/bench" -command "$invoked" "${args[@]}"
else
	go run ./bench/cmd/bench -command "$invoked" "${args[@]}"
fi
