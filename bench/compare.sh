#!/usr/bin/env bash
# bench/compare.sh — bench/run.sh at another commit and at this working tree,
# taken in turns, so that what a change costs shows beside the run-to-run
# noise of a shared machine (docs/benchmarks.md, Gateway mode).
#
#   bench/compare.sh BASE [--rounds N] [bench/run.sh arguments…]
#   bench/compare.sh cfa1603^ -sections gateway    # before and after the gateway read every spelling
#
# BASE is checked out in a temporary git worktree with this tree's bench/
# in place of its own, so both sides are measured by the same harness and
# only the program differs (the harness must build against BASE's packages).
# Each of N rounds (2 by default) runs `bench/run.sh --out DIR ARGS…` there,
# then here, each with throwaway servers of its own; the reports are printed
# in that order. Every ratio is within one run; compare a change's
# difference with how far the runs of one side differ. docs/ is not touched.
set -euo pipefail
cd "$(dirname "$0")/.."

base="${1:?usage: bench/compare.sh BASE [--rounds N] [bench/run.sh arguments…]}"
shift
rounds=2
args=()
while (($#)); do
	case "$1" in
	--rounds) rounds="${2:?--rounds needs a number}"; shift ;;
	--rounds=*) rounds="${1#*=}" ;;
	*) args+=("$1") ;;
	esac
	shift
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench/compare.sh: --rounds $rounds: want a positive number" >&2; exit 2; }

here="$(pwd)"
TMP="$(mktemp -d /tmp/waitroom-compare.XXXXXX)"
cleanup() {
	git -C "$here" worktree remove --force "$TMP/base" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
git worktree add --quiet --detach "$TMP/base" "$base"
rm -rf "$TMP/base/bench"
cp -a bench "$TMP/base/bench"
(cd "$TMP/base" && go build -o /dev/null ./bench/cmd/bench) ||
	{ echo "bench/compare.sh: this tree's bench/ does not build against $base" >&2; exit 1; }

label() { # the program's commit, and whether it has changes on top
	local c
	c="$(git -C "$1" rev-parse --short HEAD)"
	[[ -z "$(git -C "$1" status --porcelain --untracked-files=no -- . ':!bench')" ]] || c+=" with uncommitted changes"
	printf '%s' "$c"
}
for ((i = 1; i <= rounds; i++)); do
	for side in base here; do
		tree="$here"
		[[ "$side" == base ]] && tree="$TMP/base"
		printf '== round %d of %d: %s (%s), load average %s\n' "$i" "$rounds" "$side" "$(label "$tree")" \
			"$(cut -d' ' -f1-3 /proc/loadavg)" >&2
		(cd "$tree" && bench/run.sh --out "$TMP/$i-$side" "${args[@]}") >&2 # progress; the report follows
		printf '\n# round %d of %d: %s (%s)\n\n' "$i" "$rounds" "$side" "$(label "$tree")"
		cat "$TMP/$i-$side/benchmarks.md"
	done
done
