#!/usr/bin/env bash
# Proves offline what tablekit's module split promises (issue 40):
#
#  1. tidy: the go.mod and go.sum of every module but the core are tidy.
#     go mod tidy ignores go.work, so it resolves tablekit's own modules at
#     the version they require (their next release) from a file proxy made
#     of this tree; the go.sum lines of those versions are left out of the
#     committed go.sum files (they change with every commit until the
#     release writes them), every other line must match.
#  2. install: go install github.com/tablekit/tablekit/cmd/tablekit@v0.0.1-test
#     (and cmd/tablekit-vet) works from a module proxy, as users install the
#     commands: no replace directive, nothing of this checkout but what the
#     proxy serves.
#  3. consumer: a module importing every public package of the core has in
#     its build list tablekit and only modules that the Azure SDK modules
#     tablekit requires bring themselves (no OpenTelemetry, no progressbar).
#
# The proxy holds this tree's modules, zipped as the go command zips them
# (.ci/modproxy); every other module comes from the module cache, read as a
# file proxy (nothing is fetched from the network when the earlier steps of
# .ci/run have downloaded what the workspace builds), and the module cache
# is a fresh one in a temporary folder, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

core=github.com/tablekit/tablekit
test_version=v0.0.1-test
cache="$(go env GOMODCACHE)/cache/download"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
proxy="$work/proxy"

# requires prints the direct requirements of go.mod file $1: path version.
requires() {
	go mod edit -json "$1" | awk '
		/"Path":/ { p = $2 }
		/"Version":/ { v = $2 }
		/"Indirect": true/ { ind = 1 }
		/^\t\t}/ { if (p != "" && !ind) print p, v; p = ""; v = ""; ind = 0 }' | tr -d '",'
}

# The version at which the modules require each other: their next release.
release="$(requires cmd/tablekit/go.mod | awk -v core="$core" '$1 == core { print $2 }')"
if [ -z "$release" ]; then
	echo "cmd/tablekit/go.mod does not require $core" >&2
	exit 1
fi
echo "tablekit's modules require each other at $release; the commands are published at $test_version"

# The proxy: the core and otelkit at the release the modules require and at
# the made-up version; the commands at the made-up version.
(
	cd .ci/modproxy
	GOWORK=off go run . -out "$proxy" \
		"$core=$root@$release" "$core=$root@$test_version" \
		"$core/otelkit=$root/otelkit@$release" "$core/otelkit=$root/otelkit@$test_version" \
		"$core/cmd/tablekit=$root/cmd/tablekit@$test_version" \
		"$core/cmd/tablekit-vet=$root/cmd/tablekit-vet@$test_version"
)

# Every public package of the core module (not internal, not examples),
# and the Azure SDK modules it requires.
pkgs="$(GOWORK=off go list ./... | grep -vE '/(internal|examples)(/|$)')"
azure="$(requires go.mod | grep '^github.com/Azure/azure-sdk-for-go/sdk/')"

# The user's GOPROXY last, for a module the earlier builds did not need to
# download (on a fresh machine): where everything is in the module cache,
# nothing is fetched.
export GOWORK=off GOMODCACHE="$work/modcache" GOPROXY="file://$proxy,file://$cache,$(go env GOPROXY)" GOSUMDB=off GOFLAGS=-modcacherw GOTOOLCHAIN=local

echo
echo "--- tidy"
SECONDS=0
ours="^[+-]$core(/otelkit)? $release(/go\.mod)? "
tidy_failed=0
for m in otelkit cmd/tablekit cmd/tablekit-vet examples/tracing internal/readme; do
	diff="$(cd "$m" && go mod tidy -diff 2>&1)" || true
	rest="$(printf '%s\n' "$diff" | grep -E '^[+-]' | grep -vE '^(\+\+\+|---) ' | grep -vE "$ours" || true)"
	if [ -n "$rest" ]; then
		echo "$m: go.mod or go.sum is not tidy:" >&2
		printf '%s\n' "$diff" >&2
		tidy_failed=1
	else
		echo "$m: tidy"
	fi
done
[ "$tidy_failed" -eq 0 ]

echo
echo "--- install (tidy: ${SECONDS}s)"
SECONDS=0
# -trimpath: the module cache is a new folder on every run; without its
# path in the build, the build cache serves what an earlier run built.
mkdir -p "$work/bin" "$work/elsewhere"
cd "$work/elsewhere"
GOBIN="$work/bin" go install -trimpath "$core/cmd/tablekit@$test_version"
GOBIN="$work/bin" go install -trimpath "$core/cmd/tablekit-vet@$test_version"
for cmd in tablekit tablekit-vet; do
	go version -m "$work/bin/$cmd" | grep -E "^\s+(mod|dep)\s+$core" | sed "s/^\s*/$cmd: /"
done
usage="$("$work/bin/tablekit" -h 2>&1 || true)"
if ! grep -q "^Usage: tablekit COMMAND" <<<"$usage"; then
	echo "the installed tablekit does not print its usage:" >&2
	echo "$usage" >&2
	exit 1
fi
usage="$("$work/bin/tablekit-vet" -h 2>&1 || true)"
if ! grep -q "check tablekit.Where calls" <<<"$usage"; then
	echo "the installed tablekit-vet does not print its usage:" >&2
	echo "$usage" >&2
	exit 1
fi
echo "go install $core/cmd/tablekit@$test_version and cmd/tablekit-vet@$test_version: ok"

echo
echo "--- consumer (install: ${SECONDS}s)"
SECONDS=0
mkdir -p "$work/consumer" "$work/azonly"
{
	echo "// Package consumer imports every public package of tablekit's core."
	echo "package consumer"
	echo
	echo "import ("
	for p in $pkgs; do echo "	_ \"$p\""; done
	echo ")"
} >"$work/consumer/consumer.go"
# The baseline: the Azure SDK modules the core requires, at its versions,
# without tablekit.
{
	echo "// Package azonly imports the Azure SDK modules that tablekit requires."
	echo "package azonly"
	echo
	echo "import ("
	printf '%s\n' "$azure" | while read -r m _; do echo "	_ \"$m\""; done
	echo ")"
} >"$work/azonly/azonly.go"
(cd "$work/consumer" && go mod init example.com/consumer >/dev/null 2>&1 && go get "$core@$test_version" >/dev/null 2>&1 && go mod tidy >/dev/null)
(cd "$work/azonly" && go mod init example.com/azonly >/dev/null 2>&1)
printf '%s\n' "$azure" | while read -r m v; do
	(cd "$work/azonly" && go mod edit -require="$m@$v")
done
(cd "$work/azonly" && go mod tidy >/dev/null)
(cd "$work/consumer" && go list -e -m -f '{{.Path}}' all | grep -v '^example.com/consumer$' | sort) >"$work/consumer.list"
(cd "$work/azonly" && go list -e -m -f '{{.Path}}' all | grep -v '^example.com/azonly$' | sort) >"$work/azonly.list"
echo "a module importing $(echo "$pkgs" | wc -w) packages of $core@$test_version has $(wc -l <"$work/consumer.list") modules in its build list:"
sed 's/^/  /' "$work/consumer.list"
extra="$(comm -23 "$work/consumer.list" "$work/azonly.list" | grep -vx "$core" || true)"
if [ -n "$extra" ]; then
	echo "modules that neither tablekit nor the Azure SDK modules it requires ($(printf '%s\n' "$azure" | awk '{ print $1 }' | xargs)) bring:" >&2
	echo "$extra" >&2
	exit 1
fi
# The tools' own dependencies by name, in case the Azure SDK modules ever
# bring them (x/tools, x/term and x/mod are in the Azure SDK's build list:
# golang.org/x/crypto and x/net require them).
if grep -E 'opentelemetry|progressbar' "$work/consumer.list"; then
	echo "otelkit's or the CLI's dependencies are in the consumer's build list" >&2
	exit 1
fi
echo "all of them but $core are in the build list of the Azure SDK modules alone ($(wc -l <"$work/azonly.list") modules): ok"
