#!/usr/bin/env bash
# shellcheck disable=SC2317 # the cleanup functions run from traps
# The project's one test command (README, DESIGN.md section 7; .ci/run calls it).
#
# It installs redis-server, PostgreSQL, chromium and fonts for the pages'
# languages (Hangul, Japanese, Chinese, Arabic: the browser tests), curl
# (the README and no-script tests), wrk, promtool (Debian's prometheus: the
# alert rules' checks and unit tests), a C compiler (for -race), npm and
# Python's JWT library (the API's consumers: the spec's linter and generated
# clients, the entry-verification examples), and a JDK, Jetty 9.4 and Flask
# (real backends behind gateway mode) from Debian packages when they are
# missing, installs the npm tools tools/npm pins (npm ci, cached by the lock
# file's hash: the linter, the TypeScript tools, axe-core for the pages'
# accessibility audit, Express 4 with body-parser and method-override for
# the gateway's differential fuzzer), starts throwaway Redis
# and PostgreSQL servers on free loopback ports, exports their URLs as
# WAITROOM_TEST_REDIS_URL and WAITROOM_TEST_DATABASE_URL, builds (cached by
# tools/hydra/go.sum's hash) and starts Ory Hydra on that PostgreSQL in the
# background, the admin page's sign-in's real provider (WAITROOM_TEST_HYDRA_*,
# section "hydra" below), runs `go vet` and
# `go test -race`, and always stops the servers and removes their temp dirs
# on exit. go test's output reads as plain go test's (failed tests with their
# logs; everything with -v), and the run ends with the 15 slowest tests and
# each package's time, pass or fail.
#
# Usage:
#   scripts/test.sh                                  # go test ... ./..., with each fuzz target 5,000 runs beside it
#   scripts/test.sh ./internal/queue/...             # only these packages
#   scripts/test.sh -run TestFoo ./internal/queue/...
#   scripts/test.sh -run TestFoo                     # no package given: ./...
# Arguments go to `go test` as they are; when none of them names a package
# (./x, ../x, /x, ., x/..., or the module path), ./... is added. `go vet` runs
# on the same packages.
#
# To use servers you already run, set WAITROOM_TEST_REDIS_URL and/or
# WAITROOM_TEST_DATABASE_URL; that server is then neither installed nor started.
# A Hydra of your own: set WAITROOM_TEST_HYDRA_PUBLIC, _ADMIN and _LOGIN
# (where its login and consent URLs point: the tests' screens listen there).
# WAITROOM_TEST_CHROMIUM likewise names a browser to use instead of
# /usr/bin/chromium.
# Under CI (CI=true) a server that cannot be installed or started is an error;
# outside CI the script warns and the tests that need it skip.
set -euo pipefail

export PATH="/usr/local/go/bin:${PATH:-}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

say() { printf '== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
warn() { printf '== WARNING: %s\n' "$*" >&2; }
die() { printf '== ERROR: %s\n' "$*" >&2; exit 1; }
in_ci() { [[ "${CI:-}" == "true" ]]; }
# Hide a password in a URL before printing it.
redact() { sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#' <<<"$1"; }

cd "$(dirname "${BASH_SOURCE[0]}")/.."

command -v go >/dev/null || die "go not found (looked in PATH and /usr/local/go/bin)"

# ---------------------------------------------------------------- cleanup

TMP_ROOT=""
REDIS_PID=""
PG_DATA=""
PG_USER=""
GO_PID=""
BESIDE_PID=""
HYDRA_PID=""

as_pg_user() {
	# postgres refuses to run as root: run it as $PG_USER (only set when root).
	if [[ -n "$PG_USER" ]]; then
		runuser -u "$PG_USER" -- "$@"
	else
		"$@"
	fi
}

stop_redis() {
	[[ -n "$REDIS_PID" ]] || return 0
	kill -TERM "$REDIS_PID" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$REDIS_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$REDIS_PID" 2>/dev/null || true
	wait "$REDIS_PID" 2>/dev/null || true
	REDIS_PID=""
}

stop_postgres() {
	[[ -n "$PG_DATA" && -f "$PG_DATA/postmaster.pid" ]] || { PG_DATA=""; return 0; }
	# Throwaway data: an immediate stop is fine.
	(cd "$PG_DATA/.." && as_pg_user "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w -t 10 stop) >/dev/null 2>&1 || true
	if [[ -f "$PG_DATA/postmaster.pid" ]]; then
		local pid
		pid="$(head -n1 "$PG_DATA/postmaster.pid" 2>/dev/null || true)"
		if [[ "$pid" =~ ^[0-9]+$ ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
	fi
	PG_DATA=""
}

stop_beside() {
	[[ -n "$BESIDE_PID" ]] || return 0
	kill -TERM -- "-$BESIDE_PID" 2>/dev/null || kill -TERM "$BESIDE_PID" 2>/dev/null || true
	wait "$BESIDE_PID" 2>/dev/null || true
	BESIDE_PID=""
}

stop_hydra() {
	[[ -n "$HYDRA_PID" ]] || return 0
	# Its build, migration and server run in a process group of their own.
	kill -TERM -- "-$HYDRA_PID" 2>/dev/null || kill -TERM "$HYDRA_PID" 2>/dev/null || true
	wait "$HYDRA_PID" 2>/dev/null || true
	HYDRA_PID=""
}

stop_go() {
	[[ -n "$GO_PID" ]] || return 0
	# go test runs in its own process group (setsid): stop it and the test binaries.
	kill -TERM -- "-$GO_PID" 2>/dev/null || kill -TERM "$GO_PID" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$GO_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$GO_PID" 2>/dev/null || kill -KILL "$GO_PID" 2>/dev/null || true
	wait "$GO_PID" 2>/dev/null || true
	GO_PID=""
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	stop_beside
	stop_go
	if [[ -n "$REDIS_PID" || -n "$PG_DATA" || -n "$HYDRA_PID" ]]; then
		say "stopping test servers"
	fi
	stop_hydra
	stop_redis
	stop_postgres
	[[ -n "$TMP_ROOT" ]] && rm -rf "$TMP_ROOT"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- install

# Newest /usr/lib/postgresql/<version>/bin with a server (Debian layout);
# WAITROOM_TEST_PG_BIN overrides; else an initdb on PATH (other systems).
find_pg_bin() {
	local d
	if [[ -n "${WAITROOM_TEST_PG_BIN:-}" ]]; then
		[[ -x "$WAITROOM_TEST_PG_BIN/initdb" ]] && { printf '%s\n' "$WAITROOM_TEST_PG_BIN"; return 0; }
		return 1
	fi
	# shellcheck disable=SC2012 # Debian version dirs: plain names, sorted by version
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/postgres" && -x "$d/pg_isready" ]]; then
			printf '%s\n' "$d"
			return 0
		fi
	done
	if d="$(command -v initdb 2>/dev/null)"; then
		d="$(dirname "$(readlink -f "$d")")"
		[[ -x "$d/pg_ctl" && -x "$d/postgres" && -x "$d/pg_isready" ]] && { printf '%s\n' "$d"; return 0; }
	fi
	return 1
}

WANT_REDIS=1
WANT_PG=1
[[ -n "${WAITROOM_TEST_REDIS_URL:-}" ]] && WANT_REDIS=0
[[ -n "${WAITROOM_TEST_DATABASE_URL:-}" ]] && WANT_PG=0
CHROMIUM="${WAITROOM_TEST_CHROMIUM:-/usr/bin/chromium}"

missing=()
if ((WANT_REDIS)); then
	command -v redis-server >/dev/null || missing+=(redis-server)
	command -v redis-cli >/dev/null || missing+=(redis-tools)
fi
if ((WANT_PG)); then
	find_pg_bin >/dev/null || missing+=(postgresql)
fi
[[ -x "$CHROMIUM" || -n "${WAITROOM_TEST_CHROMIUM:-}" ]] || missing+=(chromium)
# Fonts for the waiting page's languages, or a language (browser tests,
# screenshots) is empty boxes. Small packages rather than fonts-noto-cjk
# (57 MB): Korean fonts-nanum (10 MB), Japanese fonts-ipafont-gothic
# (3.5 MB), Simplified and Traditional Chinese fonts-wqy-zenhei (7.5 MB),
# Arabic fonts-kacst-one (50 KB; the pages' font stacks name KacstOne).
# About 20 s on a fresh machine.
has_font() { command -v fc-list >/dev/null && [[ -n "$(fc-list "$1" family 2>/dev/null)" ]]; }
has_font :lang=ko || missing+=(fonts-nanum)
has_font :lang=ja || missing+=(fonts-ipafont-gothic)
{ has_font :lang=zh-cn && has_font :lang=zh-tw; } || missing+=(fonts-wqy-zenhei)
has_font KacstOne || missing+=(fonts-kacst-one)
# The README test runs the README's curl session.
command -v curl >/dev/null || missing+=(curl)
# wrk drives the hot-path section of the benchmark harness's smoke test.
command -v wrk >/dev/null || missing+=(wrk)
# nginx is the gateway section's outside anchor in the same smoke test (the
# harness runs it on a config of its own), and runs deploy/nginx.conf, the
# front document's cache, in front of real instances in internal/httpapi's
# tests and the harness's front section (about 5 s to install).
[[ -x /usr/sbin/nginx ]] || command -v nginx >/dev/null || missing+=(nginx)
# Caddy stands in front of the gateway's decision in its end-to-end tests
# (deploy/Caddyfile): Debian's 2.6 (forward_auth since 2.5), one binary,
# rather than Caddy's Go module and its hundred dependencies in go.mod.
command -v caddy >/dev/null || missing+=(caddy)
# Gateway mode's tests put it in front of real backends: a servlet on an
# embedded Jetty 9.4 (compiled by javac at test time) and Flask, run by
# Debian's own python3 (a pyenv python3 first on PATH would not see it).
command -v javac >/dev/null || missing+=(default-jdk-headless)
[[ -e /usr/share/java/jetty9-server.jar ]] || missing+=(libjetty9-java)
/usr/bin/python3 -c 'import flask' 2>/dev/null || missing+=(python3-flask)
# promtool checks the alert rules and runs their unit tests (deploy_test.go).
command -v promtool >/dev/null || missing+=(prometheus)
# python3 turns go test -json into the output and the slowest tests, and
# runs the Python draw verifier (examples/verify-draw, standard library
# only), which internal/draw's tests hold equal to Go's: they fail, never
# skip, without it.
command -v python3 >/dev/null || missing+=(python3)
# go test -race needs cgo, hence a C compiler and the libc headers.
command -v gcc >/dev/null || missing+=(gcc)
if command -v dpkg >/dev/null && [[ ! -e /usr/include/stdlib.h ]]; then
	missing+=(libc6-dev)
fi
# npm installs the tools of tools/npm (below); the machine's Node.js runs
# them, or one from the npm registry when it has none recent enough, and
# runs the page's own arithmetic on the place cases (testenv.Node).
command -v npm >/dev/null || missing+=(npm)
# The Python entry-verification example (examples/verify-entry/python)
# runs on Debian's python3 with its JWT and cryptography packages.
/usr/bin/python3 -c 'import jwt, cryptography' 2>/dev/null || missing+=(python3-jwt python3-cryptography)

if ((${#missing[@]})); then
	sudo_cmd=()
	can_install=1
	if ! command -v apt-get >/dev/null; then
		can_install=0
	elif ((EUID != 0)); then
		if ! command -v sudo >/dev/null; then
			can_install=0
		elif [[ -t 0 ]]; then
			sudo_cmd=(sudo)
		else
			sudo_cmd=(sudo -n)
		fi
	fi
	if ((can_install)); then
		say "installing ${missing[*]}"
		"${sudo_cmd[@]}" apt-get -q update
		"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
			apt-get -q install -y --no-install-recommends "${missing[@]}"
	elif in_ci; then
		die "missing ${missing[*]} and cannot install (need apt-get, as root or with sudo)"
	else
		warn "missing ${missing[*]}; cannot install (need apt-get, as root or with sudo); tests needing them will skip"
	fi
fi

# ---------------------------------------------------------------- servers

# A random loopback port below the Linux ephemeral range that nobody listens on.
free_port() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	return 1
}

show_log() {
	printf -- '---- %s ----\n' "$1" >&2
	tail -n 60 "$1" >&2 2>/dev/null || true
	printf -- '---- end of %s ----\n' "$1" >&2
}

new_tmp_root() {
	[[ -n "$TMP_ROOT" ]] && return 0
	# As root, /tmp: the postgres user must be able to reach its data dir.
	local base=/tmp
	((EUID == 0)) || base="${TMPDIR:-/tmp}"
	TMP_ROOT="$(mktemp -d "${base%/}/waitroom-test.XXXXXX")"
	chmod 755 "$TMP_ROOT"
}

start_redis() {
	local dir="$TMP_ROOT/redis" port attempt
	mkdir -p "$dir"
	for attempt in 1 2 3; do
		port="$(free_port)" || die "no free loopback port for redis"
		say "starting redis on 127.0.0.1:$port"
		redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
			--dir "$dir" --daemonize no --logfile '' >"$dir/redis.log" 2>&1 </dev/null &
		REDIS_PID=$!
		for _ in $(seq 100); do
			if [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null || true)" == PONG ]]; then
				export WAITROOM_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
				return 0
			fi
			kill -0 "$REDIS_PID" 2>/dev/null || break
			sleep 0.1
		done
		stop_redis
		if grep -qi 'address already in use' "$dir/redis.log" && ((attempt < 3)); then
			say "port $port taken, trying another"
			continue
		fi
		break
	done
	show_log "$dir/redis.log"
	die "redis did not start"
}

pick_pg_user() {
	((EUID == 0)) || return 0
	command -v runuser >/dev/null || die "runuser not found (util-linux); needed to run postgres as a non-root user"
	if id -u postgres >/dev/null 2>&1; then
		PG_USER=postgres
	else
		id -u waitroom-test >/dev/null 2>&1 ||
			useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin waitroom-test
		PG_USER=waitroom-test
	fi
}

start_postgres() {
	local dir="$TMP_ROOT/pg" log port attempt
	log="$dir/postgres.log"
	pick_pg_user
	mkdir -p "$dir"
	[[ -n "$PG_USER" ]] && chown "$PG_USER" "$dir"
	say "initdb ($("$PG_BIN/postgres" --version))"
	if ! (cd "$dir" && as_pg_user "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres \
		-E UTF8 --locale=C --no-sync) >"$TMP_ROOT/initdb.log" 2>&1; then
		show_log "$TMP_ROOT/initdb.log"
		die "initdb failed"
	fi
	cat >>"$dir/data/postgresql.conf" <<-EOF

		# scripts/test.sh: throwaway test server
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$dir'
		max_connections = 200
		fsync = off
		synchronous_commit = off
		full_page_writes = off
	EOF
	for attempt in 1 2 3; do
		port="$(free_port)" || die "no free loopback port for postgres"
		say "starting postgres on 127.0.0.1:$port"
		PG_DATA="$dir/data"
		if (cd "$dir" && as_pg_user "$PG_BIN/pg_ctl" -D "$dir/data" -l "$log" -o "-p $port" \
			-w -t 60 start) >/dev/null 2>&1 </dev/null; then
			local ok=0
			for _ in $(seq 100); do
				if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres; then
					ok=1
					break
				fi
				sleep 0.1
			done
			if ((ok)); then
				export WAITROOM_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
				return 0
			fi
		fi
		stop_postgres
		if grep -qi 'address already in use' "$log" 2>/dev/null && ((attempt < 3)); then
			say "port $port taken, trying another"
			: >"$log"
			continue
		fi
		break
	done
	show_log "$log"
	die "postgres did not start"
}

if ((WANT_REDIS)); then
	if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
		new_tmp_root
		start_redis
	elif in_ci; then
		die "redis-server/redis-cli not found"
	else
		warn "redis-server not found: tests needing Redis will skip"
	fi
else
	say "using existing redis at $(redact "$WAITROOM_TEST_REDIS_URL")"
fi

if ((WANT_PG)); then
	if PG_BIN="$(find_pg_bin)"; then
		new_tmp_root
		start_postgres
	elif in_ci; then
		die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin"
	else
		warn "PostgreSQL not found: tests needing PostgreSQL will skip"
	fi
else
	say "using existing postgres at $(redact "$WAITROOM_TEST_DATABASE_URL")"
fi

# ---------------------------------------------------------------- hydra

# Ory Hydra, the real OpenID Connect provider the admin page's sign-in is
# tested against (internal/adminsso/hydratest; issue 56). It is built from
# tools/hydra, a module of its own (Hydra's hundreds of dependencies never
# enter the product's go.mod), with CGO_ENABLED=0 and so without SQLite: it
# keeps its data on the PostgreSQL above, in a database of its own. The
# binary is cached by tools/hydra/go.sum's hash where the npm tools are
# (scripts/npm-tools.sh names TOOLS_CACHE). A cold build takes about 1.5
# minutes of a 2-core machine, so the build, the migration and the server
# run in the background, beside go vet and the tests' compile, and never
# delay go test's start: the URLs are exported now, and the tests that
# need Hydra wait for its /health/ready (testenv.Hydra), with the log
# (WAITROOM_TEST_HYDRA_LOG) to show should it never come.
# Its login and consent screens are the tests' own (hydratest), on
# WAITROOM_TEST_HYDRA_LOGIN: Hydra reads one login URL from its settings,
# for every client.
# shellcheck source=scripts/npm-tools.sh
source scripts/npm-tools.sh
hydra_run() {
	local bin="$1"
	if [[ ! -x "$bin" ]]; then
		say "building Ory Hydra (tools/hydra) into $bin"
		mkdir -p "$(dirname "$bin")"
		CGO_ENABLED=0 go build -C tools/hydra -trimpath -o "$bin.$$" github.com/ory/hydra/v2 &&
			mv "$bin.$$" "$bin" || return 1
		say "hydra built"
	fi
	# A fresh database each run (a server of the caller's own may hold one
	# from before).
	psql -q -v ON_ERROR_STOP=1 "$WAITROOM_TEST_DATABASE_URL" \
		-c 'DROP DATABASE IF EXISTS waitroom_test_hydra WITH (FORCE)' -c 'CREATE DATABASE waitroom_test_hydra' || return 1
	"$bin" migrate sql up -e --yes || return 1
	say "hydra migrated; serving"
	exec "$bin" serve all --dev --sqa-opt-out
}
start_hydra() {
	local key bin pub adm login
	key="$(sha256sum tools/hydra/go.sum | cut -c1-16)"
	mkdir -p "$TOOLS_CACHE"
	bin="$(cd "$TOOLS_CACHE" && pwd)/hydra-$key/hydra"
	pub="$(free_port)" && adm="$(free_port)" && login="$(free_port)" || die "no free loopback ports for hydra"
	[[ "$pub" != "$adm" && "$pub" != "$login" && "$adm" != "$login" ]] || { start_hydra; return; }
	export WAITROOM_TEST_HYDRA_PUBLIC="http://127.0.0.1:$pub" WAITROOM_TEST_HYDRA_ADMIN="http://127.0.0.1:$adm" \
		WAITROOM_TEST_HYDRA_LOGIN="127.0.0.1:$login" WAITROOM_TEST_HYDRA_LOG="$TMP_ROOT/hydra.log"
	say "hydra: building or taking it from the cache, then starting it in the background (log: $WAITROOM_TEST_HYDRA_LOG)"
	local dsn="${WAITROOM_TEST_DATABASE_URL%%\?*}"
	dsn="${dsn%/*}/waitroom_test_hydra?sslmode=disable"
	# --dev: an issuer over plain HTTP on loopback. PKCE enforced for every
	# client, so that a sign-in without it fails here as it would at a
	# strict provider.
	DSN="$dsn" SECRETS_SYSTEM="waitroom-test-$RANDOM$RANDOM$RANDOM$RANDOM" LOG_LEVEL=warn \
		URLS_SELF_ISSUER="$WAITROOM_TEST_HYDRA_PUBLIC" URLS_LOGIN="http://127.0.0.1:$login/login" \
		URLS_CONSENT="http://127.0.0.1:$login/consent" OAUTH2_PKCE_ENFORCED=true \
		SERVE_PUBLIC_HOST=127.0.0.1 SERVE_PUBLIC_PORT="$pub" SERVE_ADMIN_HOST=127.0.0.1 SERVE_ADMIN_PORT="$adm" \
		setsid -w bash -c "SECONDS=$SECONDS; $(declare -f say hydra_run); hydra_run $(printf '%q' "$bin")" \
		</dev/null >"$WAITROOM_TEST_HYDRA_LOG" 2>&1 &
	HYDRA_PID=$!
}
if [[ -n "${WAITROOM_TEST_HYDRA_PUBLIC:-}" ]]; then
	say "using existing hydra at $WAITROOM_TEST_HYDRA_PUBLIC"
elif [[ -n "${WAITROOM_TEST_DATABASE_URL:-}" ]] && command -v psql >/dev/null && command -v setsid >/dev/null; then
	new_tmp_root
	start_hydra
elif in_ci; then
	die "hydra needs PostgreSQL, psql and setsid"
else
	warn "no PostgreSQL, psql or setsid: hydra does not start, and the sign-in tests fail"
fi

if [[ -x "$CHROMIUM" ]]; then
	export WAITROOM_TEST_CHROMIUM="$CHROMIUM"
elif in_ci; then
	die "chromium not found at $CHROMIUM"
else
	warn "chromium not found at $CHROMIUM: the browser tests will skip"
fi
if ! command -v wrk >/dev/null; then
	in_ci && die "wrk not found"
	warn "wrk not found: the harness smoke test leaves out the hot paths"
fi
if ! command -v promtool >/dev/null; then
	in_ci && die "promtool not found (Debian's prometheus package)"
	warn "promtool not found: the alert rules' checks will skip"
fi

# ---------------------------------------------------------------- npm tools

# The npm tools tools/npm pins (scripts/npm-tools.sh: the spec's linter,
# the TypeScript tools, jose, axe-core, Express for the gateway's
# differential fuzzer), installed once per lock file into a cache
# (scripts/npm-tools.sh, sourced above).
if ! install_npm_tools; then
	in_ci && die "the npm tools of tools/npm could not be installed"
	warn "the npm tools of tools/npm are not installed: the tests of the API's consumers will skip"
fi

[[ -n "${WAITROOM_TEST_REDIS_URL:-}" ]] && say "WAITROOM_TEST_REDIS_URL=$(redact "$WAITROOM_TEST_REDIS_URL")"
[[ -n "${WAITROOM_TEST_DATABASE_URL:-}" ]] && say "WAITROOM_TEST_DATABASE_URL=$(redact "$WAITROOM_TEST_DATABASE_URL")"

# ---------------------------------------------------------------- go

# Split the arguments: package patterns (also vetted) vs. flags for go test.
is_pkg() {
	case "$1" in
	. | .. | ./* | ../* | /* | *...*) return 0 ;;
	"$MODULE" | "$MODULE"/*) return 0 ;;
	esac
	return 1
}
# go test / build flags that take a value as the next argument ("-run Foo").
takes_value() {
	case "${1#-}" in
	-*) takes_value "${1#-}" ;;
	test.*) takes_value "-${1#-test.}" ;;
	run | skip | bench | benchtime | count | cpu | list | parallel | timeout | shuffle | \
		fuzz | fuzztime | fuzzminimizetime | coverprofile | covermode | coverpkg | \
		cpuprofile | memprofile | memprofilerate | blockprofile | blockprofilerate | \
		mutexprofile | mutexprofilefraction | outputdir | trace | o | exec | vet | p | \
		tags | mod | modfile | ldflags | gcflags | asmflags | gccgoflags | \
		installsuffix | pkgdir | toolexec | overlay | pgo | C | compiler | buildmode)
		return 0 ;;
	esac
	return 1
}
# Every package, those whose tests take longest first: go test starts test
# binaries in the order it is given them, -p at a time, so a long package
# started last would run alone at the end while the other core idles (as
# internal/web did, started last of ./... for its 2.5 minutes). Measured
# with the summary at the end of a run; a package missing from the list
# (a new one) runs after these, in go list's order.
longest_first() {
	local slow=(./bench ./internal/web ./internal/app ./internal/queue/redisstore ./internal/queue/memstore
		./internal/gateway ./internal/difffuzz ./internal/httpapi ./internal/fairness ./internal/repolint)
	local p
	for p in "${slow[@]}"; do [[ -d "$p" ]] && printf '%s\n' "$p"; done
	go list -f '{{.Dir}}' ./... | sed "s#^$PWD#.#" | grep -vxF -f <(printf '%s\n' "${slow[@]}")
}
MODULE="$(go list -m 2>/dev/null | head -n1 || true)"
[[ -n "$MODULE" ]] || MODULE="github.com/waitroom/waitroom"
pkgs=()
vet_flags=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	a="${args[i]}"
	[[ "$a" == "-args" || "$a" == "--args" ]] && break
	case "$a" in
	-tags=* | --tags=*) vet_flags+=("$a") ;;
	-tags | --tags) vet_flags+=("$a" "${args[i + 1]:-}") ;;
	esac
	if [[ "$a" == -* ]]; then
		[[ "$a" != *=* ]] && takes_value "$a" && ((i += 1))
		continue
	fi
	is_pkg "$a" && pkgs+=("$a")
done
test_args=("$@")
if ((${#pkgs[@]} == 0)); then
	pkgs=(./...)
	# Before the flags: anything after -args belongs to the test binary.
	mapfile -t every < <(longest_first)
	test_args=("${every[@]}" "$@")
fi

export CGO_ENABLED=1 # -race needs cgo
# -trimpath: without it the build cache's keys hold the checkout's path, so
# a second clone on a machine whose cache is warm compiled every package of
# the module again (go vet alone took 28 s instead of 1; the test binaries
# under -race minutes). The tests' own go commands (go run, go build)
# inherit it.
export GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}"

say "$(go version)"
say "go vet ${vet_flags[*]:+${vet_flags[*]} }${pkgs[*]}"
go vet "${vet_flags[@]}" "${pkgs[@]}"

# WAITROOM_TEST_RACE=0 drops -race: for benchmarks, whose figures the race
# detector would distort; tests always run with it.
race=(-race)
[[ "${WAITROOM_TEST_RACE:-1}" == "0" ]] && race=()
# -timeout guards against a hang, per package: internal/app, when it held
# the end-to-end and browser tests (now in internal/httpapi, gateway, web),
# took 4-10 minutes on the shared development machine depending on its
# load, and overran 12 minutes at a load average of 30 once the pages'
# audit and languages joined it (docs/page.md); bench, its harness's short
# runs, 2.3 minutes on a quiet machine. 30 leaves either room for a machine
# ten times slower than a quiet one.
timeout=30m
# Four test binaries at once on two cores (go test's -p is the number of
# cores by default): most of the end-to-end tests wait on Redis, browsers
# and admission ticks, not the CPU, so two at a time left a core idle half
# of the time (the tests took 8.1 minutes with -p 2, 5.6 with -p 4, both
# warm and quiet). WAITROOM_TEST_P sets another; a -p among the arguments
# wins.
parallel=(-p "${WAITROOM_TEST_P:-4}")
shown="${test_args[*]}"
[[ "${pkgs[*]}" == "./..." ]] && shown="./... (the longest first) $*"
say "go test -json ${race[*]:+${race[*]} }-count=1 -timeout $timeout ${parallel[*]} $shown"
# In its own process group, so that a signal to this script stops go test and
# its test binaries before the servers go away.
group=()
command -v setsid >/dev/null && group=(setsid -w)
run_go() {
	"${group[@]}" go "$@" </dev/null &
	GO_PID=$!
	local rc=0
	wait "$GO_PID" || rc=$?
	GO_PID=""
	return "$rc"
}
# -json, through scripts/gotest-output.py: it prints what plain go test
# would (each failed test's output with its logs, each package's ok or FAIL
# line; everything with -v) and keeps the tests' and packages' times for
# the summary at the end.
verbose=()
for a in "${args[@]}"; do
	[[ "$a" == "-args" || "$a" == "--args" ]] && break
	case "$a" in -v | --v | -v=true | --v=true | -test.v | --test.v | -test.v=true | --test.v=true) verbose=(-v) ;; esac
done
new_tmp_root
timings="$TMP_ROOT/slowest.txt"

# ---------------------------------------------------------------- beside the tests

# On a full run (no arguments), three checks run beside go test, in a process
# group of their own, their output kept for the end: the tests wait on
# Redis, browsers and tickers for much of their time, and these use the
# CPU they leave (a full run took 10.4 minutes with them after the tests,
# 2.1 of which were these).
#
# The proof that the fairness check can fail (internal/fairness,
# docs/operations.md "Fairness you can check"): a build with five
# deliberate bugs (-tags historybugs, never in the normal build), each of
# which the check must catch within a few histories; it logs how many.
#
# Every fuzz target fuzzes, a second or a few: WAITROOM_TEST_FUZZTIME (go
# test's -fuzztime; default 5000x, that many inputs; 0 skips). Each target
# costs about 4 CPU-seconds before its first new input (the coordinator,
# its workers, the corpus run as a baseline) and 5,000 inputs about 1.5
# more; 20,000 took 12-25 each, 200 of the run's 615 CPU-seconds (the long
# form: WAITROOM_TEST_FUZZTIME=1m scripts/test.sh). A count,
# not a time: Go 1.26's fuzzing coordinator can fail a target with a bare
# "context deadline exceeded" when a timed -fuzztime ends while a worker is
# busy (golang/go#75804, fixed in 1.27; a loaded CI run met it), and a
# count sets no deadline. A crasher is saved under the package's
# testdata/fuzz/<Target>/ and fails the run; committed, it is a regression
# test that every go test runs from then on.
beside_checks() {
	local rc=0
	# deadcode (golang.org/x/tools/cmd/deadcode, pinned in tools/deadcode/go.mod, a
	# module of its own so that the product's go.mod does not carry the tool's
	# dependencies): no function that neither the program nor a test reaches.
	# About 20 CPU-seconds; it fails the run on any function it names.
	say "deadcode -test ./... (tools/deadcode)"
	local dead
	if go build -C tools/deadcode -o "$TMP_ROOT/deadcode" golang.org/x/tools/cmd/deadcode &&
		dead="$("$TMP_ROOT/deadcode" -test ./...)"; then
		[[ -z "$dead" ]] || { printf '%s\n' "$dead"; say "deadcode: the functions above are reached by nothing: delete them"; rc=1; }
	else
		rc=1
	fi
	say "go vet -tags historybugs, go test -tags historybugs -run TestDeliberateBugsAreCaught ./internal/fairness"
	go vet -tags historybugs ./internal/fairness ./internal/app ./internal/queue/redisstore || rc=$?
	go test -tags historybugs -count=1 -timeout 10m -run '^TestDeliberateBugsAreCaught$' -v ./internal/fairness || rc=$?
	local fuzztime="${WAITROOM_TEST_FUZZTIME:-5000x}"
	[[ "$fuzztime" == 0 || "$fuzztime" == 0s ]] && return "$rc"
	# One instrumented test binary per package (go test -fuzz would link one
	# per target, 2-3 CPU-seconds each), run from the package's directory
	# as go test runs it (testdata/fuzz/ is read and written there), with
	# go test's cache of interesting inputs, and one worker: a count of
	# inputs costs less CPU in one worker than in two.
	local pkg target imp bin="" last="" cache
	cache="$(go env GOCACHE)/fuzz"
	while read -r pkg target; do
		if [[ "$pkg" != "$last" ]]; then
			last="$pkg"
			imp="$(go list -f '{{.ImportPath}}' "$pkg")"
			bin="$TMP_ROOT/fuzz-${imp//\//_}.test"
			go test -c -fuzz=. -o "$bin" "$pkg" || { rc=$?; bin=""; }
		fi
		[[ -n "$bin" ]] || continue
		say "fuzz $target ($pkg), -fuzztime $fuzztime"
		(cd "$pkg" && "$bin" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$fuzztime" -test.parallel=1 \
			-test.timeout=10m -test.fuzzcachedir="$cache/$imp") || rc=$?
	done < <(grep -r --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' . |
		sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]*)$#\1 \2#' | sort)
	return "$rc"
}
beside_log="$TMP_ROOT/beside.log"
if (($# == 0)); then
	say "beside the tests: deadcode, the deliberate bugs of internal/fairness, then every fuzz target (their output after the tests')"
	"${group[@]}" bash -c "SECONDS=$SECONDS; TMP_ROOT=$TMP_ROOT; $(declare -f say beside_checks); beside_checks" </dev/null >"$beside_log" 2>&1 &
	BESIDE_PID=$!
fi

# ---------------------------------------------------------------- go test

status=0
exec {out}> >(python3 scripts/gotest-output.py "${verbose[@]}" --summary "$timings")
printer=$!
run_go test -json "${race[@]}" -count=1 -timeout "$timeout" "${parallel[@]}" "${test_args[@]}" >&"$out" || status=$?
exec {out}>&-
wait "$printer" || { warn "scripts/gotest-output.py failed (exit $?)"; ((status)) || status=1; }

if [[ -n "$BESIDE_PID" ]]; then
	beside=0
	wait "$BESIDE_PID" || beside=$?
	BESIDE_PID=""
	cat "$beside_log"
	((beside == 0)) || { say "the checks beside the tests FAILED (exit $beside)"; ((status)) || status=$beside; }
fi
# The slowest tests and packages of the go test run above, pass or fail.
[[ -s "$timings" ]] && cat "$timings"
if ((status == 0)); then
	say "tests passed"
else
	say "tests FAILED (exit $status)"
fi
exit "$status"
