package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// The mutation harness (docs/mutants.md) plants bugs in a scratch copy of the SDK and
// names it in COLOSSUS_GO_SDK_DIR. This client then rebuilds itself against that copy
// (a -modfile whose replace points there, in the copy's own folder) and runs the rebuilt
// binary in its place. Without the variable nothing happens.
const sdkDirEnv = "COLOSSUS_GO_SDK_DIR"

func rebuildAgainstSDKCopy() error {
	dir := os.Getenv(sdkDirEnv)
	if dir == "" || os.Getenv("COLOSSUS_GO_CLIENT_REBUILT") == "1" {
		return nil
	}
	out := filepath.Join(dir, ".conformance-client")
	binary := filepath.Join(out, "conformance-client")
	if _, err := os.Stat(binary); err != nil {
		if err := os.MkdirAll(out, 0o700); err != nil {
			return err
		}
		mod, err := os.ReadFile("go.mod")
		if err != nil {
			return err
		}
		sum, err := os.ReadFile("go.sum")
		if err != nil {
			return err
		}
		text := strings.Replace(string(mod), "=> ../../../sdk/go", "=> "+dir, 1)
		if text == string(mod) {
			return fmt.Errorf("go.mod has no replace directive to redirect")
		}
		if err := os.WriteFile(filepath.Join(out, "go.mod"), []byte(text), 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "go.sum"), sum, 0o600); err != nil {
			return err
		}
		build := exec.Command("go", "build", "-modfile", filepath.Join(out, "go.mod"), "-o", binary, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building against %s: %w", dir, err)
		}
	}
	env := append(os.Environ(), "COLOSSUS_GO_CLIENT_REBUILT=1")
	return syscall.Exec(binary, append([]string{binary}, os.Args[1:]...), env)
}
