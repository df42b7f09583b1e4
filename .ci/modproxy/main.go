// Command modproxy writes modules from directories of this repository into
// a file-based module proxy (GOPROXY=file://DIR), as a module proxy serves
// released versions: for each module, @v/list, and the version's .info,
// .mod and .zip (made as the go command makes them, by golang.org/x/mod/zip:
// nested modules, vendor folders and what a module zip may not hold are
// left out). .ci/modules-proof.sh uses it to install tablekit's commands
// at a made-up version and to resolve a consumer module offline.
//
//	go run . -out DIR PATH=DIR@VERSION...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy's folder")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR PATH=DIR@VERSION...")
		os.Exit(2)
	}
	for _, arg := range flag.Args() {
		if err := publish(*out, arg); err != nil {
			fmt.Fprintln(os.Stderr, "modproxy:", err)
			os.Exit(1)
		}
	}
}

// publish writes the module that arg (PATH=DIR@VERSION) names into the
// proxy at out.
func publish(out, arg string) error {
	path, rest, ok1 := strings.Cut(arg, "=")
	dir, version, ok2 := strings.Cut(rest, "@")
	if !ok1 || !ok2 {
		return fmt.Errorf("%q: want PATH=DIR@VERSION", arg)
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return err
	}
	epath, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	ever, err := module.EscapeVersion(version)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, epath, "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, ever+".mod"), mod, 0o644); err != nil {
		return err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err := os.WriteFile(filepath.Join(vdir, ever+".info"), info, 0o644); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(vdir, ever+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(z, mv, dir); err != nil {
		z.Close()
		return fmt.Errorf("%s: %w", mv, err)
	}
	if err := z.Close(); err != nil {
		return err
	}
	list, err := os.OpenFile(filepath.Join(vdir, "list"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(list, version); err != nil {
		list.Close()
		return err
	}
	return list.Close()
}
