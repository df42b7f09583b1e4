package azurite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrNodeNotFound is returned (wrapped) by [Start] when Azurite has to be
// run or installed and Node.js or npm is missing, or Node.js is older than
// 18 (minNodeMajor). Start checks this before any npm work, and the error
// says what it found where.
var ErrNodeNotFound = fmt.Errorf("azurite: Node.js %d or later, with npm, is needed to run Azurite %s", minNodeMajor, Version)

// minNodeMajor is the oldest Node.js major version tablekit runs Azurite
// on: the oldest its tests run on (Debian 12's nodejs is 18.20; this
// repository's CI installs it when a machine has no Node.js). Azurite
// 3.37.0's package.json asks for Node.js 22 (3.36.0's for 21, 3.35.0's
// for 10): it raised the number as Node.js releases reached their end of
// life, and runs on 18 and 20. npm installs it there with its engine
// check off (runNpmInstall). README.md and the package documentation say
// the same number; TestNodeRequirementIsOneNumber checks it.
const minNodeMajor = 18

// installNode is where the error of a missing or old Node.js sends the
// user.
const installNode = "install it from https://nodejs.org or your package manager"

// cacheDirEnv is the environment variable that overrides the folder the
// pinned Azurite is installed into (see [Options.CacheDir]).
const cacheDirEnv = "TABLEKIT_AZURITE_DIR"

// stampName marks a completed installation inside its folder.
const stampName = ".tablekit-installed"

// lookPathFunc finds an executable, like [exec.LookPath].
type lookPathFunc func(string) (string, error)

// resolveCommand decides how to run Azurite: the program and the leading
// arguments (the entry-point script when run through node).
func resolveCommand(ctx context.Context, o *Options, lookPath lookPathFunc) (string, []string, error) {
	if o.Executable != "" {
		return commandFor(ctx, o.Executable, lookPath)
	}
	if !o.skipPath {
		if p, err := lookPath("azurite"); err == nil {
			return commandFor(ctx, p, lookPath)
		}
	}
	node, err := findNode(ctx, lookPath)
	if err != nil {
		return "", nil, err
	}
	root, err := cacheDir(o)
	if err != nil {
		return "", nil, err
	}
	notice := o.notice
	if notice == nil {
		notice = os.Stderr
	}
	script, err := ensureInstalled(ctx, root, lookPath, notice)
	if err != nil {
		return "", nil, err
	}
	return node, []string{script}, nil
}

// commandFor returns how to run the Azurite at path. npm's launchers are
// symlinks or shims around azurite.js: running that script with node
// directly keeps Azurite a single process, so killing it leaves no child.
func commandFor(ctx context.Context, path string, lookPath lookPathFunc) (string, []string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, fmt.Errorf("azurite: %w", err)
	}
	script := ""
	switch {
	case strings.HasSuffix(real, ".js") || isNodeScript(real):
		script = real
	default:
		// Windows npm shims (azurite.cmd, azurite.ps1) sit beside node_modules.
		cand := filepath.Join(filepath.Dir(real), "node_modules", "azurite")
		if s, ok := binScript(cand); ok {
			script = s
		}
	}
	if script == "" {
		return real, nil, nil
	}
	node, err := findNode(ctx, lookPath)
	if err != nil {
		return "", nil, err
	}
	return node, []string{script}, nil
}

// isNodeScript reports whether the file at path starts with a node shebang.
func isNodeScript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 128)
	n, _ := f.Read(head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	return bytes.HasPrefix(line, []byte("#!")) && bytes.Contains(line, []byte("node"))
}

// findNode returns the path of a node executable of a supported version.
func findNode(ctx context.Context, lookPath lookPathFunc) (string, error) {
	node, err := lookPath("node")
	if err != nil {
		return "", fmt.Errorf("%w: no node on PATH (%s)", ErrNodeNotFound, installNode)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s --version failed: %v", ErrNodeNotFound, node, err)
	}
	version := strings.TrimSpace(string(out))
	major, ok := nodeMajor(version)
	if !ok {
		return "", fmt.Errorf("%w: %s --version printed %q", ErrNodeNotFound, node, version)
	}
	if major < minNodeMajor {
		return "", fmt.Errorf("%w: Node.js %s at %s is too old (%s)", ErrNodeNotFound, version, node, installNode)
	}
	return node, nil
}

// nodeMajor parses the major version out of "v20.20.2".
func nodeMajor(version string) (int, bool) {
	v, ok := strings.CutPrefix(version, "v")
	if !ok {
		return 0, false
	}
	majorText, _, _ := strings.Cut(v, ".")
	major, err := strconv.Atoi(majorText)
	return major, err == nil
}

// cacheDir returns the folder that holds installed Azurite versions.
func cacheDir(o *Options) (string, error) {
	if o.CacheDir != "" {
		return filepath.Abs(o.CacheDir)
	}
	if d := os.Getenv(cacheDirEnv); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("azurite: no cache folder to install Azurite into (set %s): %w", cacheDirEnv, err)
	}
	return filepath.Join(d, "tablekit"), nil
}

// ensureInstalled installs the pinned Azurite into root once and returns
// the path of its entry-point script. Concurrent callers, in this process
// or others, wait for one installation: a lock file serialises them, the
// installation happens in a temporary folder and is renamed into place
// with a stamp file marking it complete. Before the first installation
// (or the wait for another process's) it says so on notice, in one line:
// otherwise a first test run is silent for the minute npm takes.
func ensureInstalled(ctx context.Context, root string, lookPath lookPathFunc, notice io.Writer) (string, error) {
	dir := filepath.Join(root, "azurite-"+Version)
	if script, ok := installedScript(dir); ok {
		return script, nil
	}
	npm, err := lookPath("npm")
	if err != nil {
		return "", fmt.Errorf("%w: no npm on PATH (it comes with Node.js; %s)", ErrNodeNotFound, installNode)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("azurite: %w", err)
	}
	fmt.Fprintf(notice, "tablekit: installing Azurite %s into %s (once: npm fetches about 65 MB, 360 MB installed; about a minute)\n", Version, dir)
	unlock, err := lockFile(ctx, filepath.Join(root, "azurite-"+Version+".lock"))
	if err != nil {
		return "", fmt.Errorf("azurite: waiting for the install lock: %w", err)
	}
	defer unlock()
	if script, ok := installedScript(dir); ok {
		return script, nil // another process installed it while we waited
	}
	// We hold the lock: whatever is left over is from an interrupted install.
	leftovers, _ := filepath.Glob(filepath.Join(root, "azurite-"+Version+".tmp-*"))
	for _, l := range leftovers {
		os.RemoveAll(l)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("azurite: %w", err)
	}
	tmp, err := os.MkdirTemp(root, "azurite-"+Version+".tmp-")
	if err != nil {
		return "", fmt.Errorf("azurite: %w", err)
	}
	defer os.RemoveAll(tmp) // nothing left to remove after the rename
	if err := runNpmInstall(ctx, npm, tmp); err != nil {
		return "", err
	}
	if _, ok := binScript(filepath.Join(tmp, "node_modules", "azurite")); !ok {
		return "", fmt.Errorf("azurite: npm installed azurite@%s into %s but its entry point is missing", Version, tmp)
	}
	if err := os.WriteFile(filepath.Join(tmp, stampName), []byte(Version+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("azurite: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("azurite: %w", err)
	}
	script, ok := installedScript(dir)
	if !ok {
		return "", fmt.Errorf("azurite: installation in %s is incomplete", dir)
	}
	return script, nil
}

// installedScript returns the entry point of a completed installation.
func installedScript(dir string) (string, bool) {
	if _, err := os.Stat(filepath.Join(dir, stampName)); err != nil {
		return "", false
	}
	return binScript(filepath.Join(dir, "node_modules", "azurite"))
}

// binScript reads the azurite package's package.json and returns the
// absolute path of its "azurite" bin script, if it exists.
func binScript(pkgDir string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return "", false
	}
	var pkg struct {
		Bin map[string]string `json:"bin"`
	}
	if json.Unmarshal(data, &pkg) != nil || pkg.Bin["azurite"] == "" {
		return "", false
	}
	script := filepath.Join(pkgDir, filepath.FromSlash(pkg.Bin["azurite"]))
	if fi, err := os.Stat(script); err != nil || fi.IsDir() {
		return "", false
	}
	return script, true
}

// runNpmInstall installs the pinned Azurite into prefix.
func runNpmInstall(ctx context.Context, npm, prefix string) error {
	out := &tailBuffer{limit: 16 << 10}
	cmd := exec.CommandContext(ctx, npm, "install",
		"--prefix", prefix,
		"--no-audit", "--no-fund", "--no-update-notifier",
		"--engine-strict=false", // Azurite declares a newer Node.js than it needs (see minNodeMajor)
		"--loglevel=warn",
		"azurite@"+Version)
	cmd.Dir = prefix
	cmd.Stdout = out
	cmd.Stderr = out
	setProcAttr(cmd)
	cmd.Cancel = func() error { killTree(cmd); return nil }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return fmt.Errorf("azurite: npm install azurite@%s failed (%v); npm's output:\n%s", Version, err, out.String())
	}
	return nil
}
