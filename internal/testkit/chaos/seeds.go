package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The environment variables that choose what a chaos test runs.
const (
	// EnvSeed replays one seed: TABLEKIT_CHAOS_SEED=12345.
	EnvSeed = "TABLEKIT_CHAOS_SEED"
	// EnvSeeds runs seeds 1..N (TABLEKIT_CHAOS_SEEDS=20) or the listed
	// seeds (TABLEKIT_CHAOS_SEEDS=7,42,99) instead of the CI seeds.
	EnvSeeds = "TABLEKIT_CHAOS_SEEDS"
	// EnvFull runs at full size (TABLEKIT_CHAOS_FULL=1); see [Size].
	EnvFull = "TABLEKIT_CHAOS_FULL"
)

// Seeds returns the seeds a chaos test runs: the one in
// TABLEKIT_CHAOS_SEED if set, else those TABLEKIT_CHAOS_SEEDS names, else
// the CI seeds 1, 2 and 3. A malformed variable fails t.
func Seeds(t testing.TB) []int64 {
	t.Helper()
	if v := strings.TrimSpace(os.Getenv(EnvSeed)); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("chaos: %s=%q is not a seed (an integer)", EnvSeed, v)
			return nil
		}
		return []int64{seed}
	}
	v := strings.TrimSpace(os.Getenv(EnvSeeds))
	if v == "" {
		return []int64{1, 2, 3} // the CI seeds
	}
	if !strings.Contains(v, ",") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("chaos: %s=%q is neither a count >= 1 nor a comma-separated list of seeds", EnvSeeds, v)
			return nil
		}
		seeds := make([]int64, n)
		for i := range seeds {
			seeds[i] = int64(i + 1)
		}
		return seeds
	}
	var seeds []int64
	for _, f := range strings.Split(v, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			t.Fatalf("chaos: %s=%q: %q is not a seed (an integer)", EnvSeeds, v, f)
			return nil
		}
		seeds = append(seeds, seed)
	}
	return seeds
}

// Full reports whether chaos tests run at full size: TABLEKIT_CHAOS_FULL
// is set to anything but "", "0" or "false".
func Full() bool {
	v := strings.TrimSpace(os.Getenv(EnvFull))
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// Size returns ci, or full when [Full] is set: use it for the numbers of
// writers and operations of a chaos test.
func Size(ci, full int) int {
	if Full() {
		return full
	}
	return ci
}

// Run runs fn once per seed of [Seeds], each in a subtest named
// "seed=N". Each subtest logs its seed and size; when it fails, it logs
// the command that replays it.
func Run(t *testing.T, fn func(t *testing.T, seed int64)) {
	t.Helper()
	run(t, Seeds(t), fn)
}

// RunVariant is [Run] for a costlier variant of a suite that Run runs in
// full (the same body on another backend, such as package azurite's
// Cosmos DB front): with neither TABLEKIT_CHAOS_SEED nor
// TABLEKIT_CHAOS_SEEDS set (CI) it runs fn on seed 1 alone, else on the
// seeds they name, as Run does.
func RunVariant(t *testing.T, fn func(t *testing.T, seed int64)) {
	t.Helper()
	seeds := Seeds(t)
	if strings.TrimSpace(os.Getenv(EnvSeed)) == "" && strings.TrimSpace(os.Getenv(EnvSeeds)) == "" {
		seeds = seeds[:1]
	}
	run(t, seeds, fn)
}

func run(t *testing.T, seeds []int64, fn func(t *testing.T, seed int64)) {
	t.Helper()
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			size := "CI"
			if Full() {
				size = "full"
			}
			t.Logf("chaos seed %d, %s size", seed, size)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("chaos seed %d failed; replay it with:\n\t%s", seed, ReplayCommand(t, seed))
				}
			})
			fn(t, seed)
		})
	}
}

// ReplayCommand returns the shell command that runs test t again with
// seed alone, at the current size, e.g.
//
//	TABLEKIT_CHAOS_SEED=7 go test -race -run '^TestChaosBulk$/^seed=7$' ./index
func ReplayCommand(t testing.TB, seed int64) string {
	var cmd strings.Builder
	fmt.Fprintf(&cmd, "%s=%d ", EnvSeed, seed)
	if Full() {
		fmt.Fprintf(&cmd, "%s=1 ", EnvFull)
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	run := strings.ReplaceAll(strings.Join(parts, "/"), "'", `'\''`)
	fmt.Fprintf(&cmd, "go test -race -run '%s' %s", run, packageDir())
	return cmd.String()
}

// packageDir returns the test's package directory relative to the module
// root ("./index"), or "." if it cannot tell.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}
