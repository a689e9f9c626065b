// Command gomodzip builds the Go SDK's module zip the way the Go module proxy serves it and
// checks it with the proxy's own rules (golang.org/x/mod/zip): file names, sizes, case
// collisions, nested modules and vendor folders. The output folder is laid out as a module
// proxy (MODULE/@v/VERSION.zip, .mod, .info and list), so GOPROXY=file://OUT serves it.
//
//	go run . -dir sdk/go -module github.com/obscuritylabs/colossus-sdks/sdk/go -version v0.1.0 -out dist/go
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the module's folder (holds go.mod)")
	path := flag.String("module", "", "the module path")
	version := flag.String("version", "", "the semantic version, with its leading v")
	out := flag.String("out", "", "the proxy folder to write MODULE/@v/VERSION.zip, .mod, .info into")
	flag.Parse()
	if err := run(*dir, module.Version{Path: *path, Version: *version}, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gomodzip:", err)
		os.Exit(1)
	}
}

func run(dir string, mv module.Version, out string) error {
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return err
	}
	checked, err := zip.CheckDir(dir)
	for _, f := range checked.Omitted {
		fmt.Printf("omitted (as the proxy would): %s: %v\n", f.Path, f.Err)
	}
	if err != nil {
		return fmt.Errorf("the module folder would be refused: %w", err)
	}
	escaped, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	out = filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	zipPath := filepath.Join(out, mv.Version+".zip")
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(f, mv, dir); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	inZip, err := zip.CheckZip(mv, zipPath)
	if err != nil {
		return fmt.Errorf("the zip fails the proxy's checks: %w", err)
	}
	fmt.Printf("%s@%s: %d files\n", mv.Path, mv.Version, len(inZip.Valid))
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, mv.Version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(map[string]string{"Version": mv.Version, "Time": time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, mv.Version+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "list"), []byte(mv.Version+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Println(zipPath)
	return nil
}
