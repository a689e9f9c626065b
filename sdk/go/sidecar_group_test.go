package colossus

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// S7: giving up on a worker ends its whole process group, so a child the worker started
// dies with it (killing only the worker's own pid would leave that child running).
func TestASilentSidecarsChildDiesWithIt(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "grandchild.pid")
	script := filepath.Join(dir, "stand-in.sh")
	body := "#!/bin/sh\nsleep 300 &\necho $! > " + marker + "\nexec sleep 300\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := StartSidecar(context.Background(), SidecarOptions{
		Executable: script, ApplicationID: "go-sidecar-group", StartupTimeout: 3 * time.Second,
	})
	if !errors.Is(err, ErrSidecar) {
		t.Fatalf("a silent worker: err %v, want ErrSidecar", err)
	}
	raw, readErr := os.ReadFile(marker)
	if readErr != nil {
		t.Fatalf("the stand-in never started its child: %v", readErr)
	}
	pid, convErr := strconv.Atoi(strings.TrimSpace(string(raw)))
	if convErr != nil {
		t.Fatal(convErr)
	}
	alive := true
	for i := 0; i < 50 && alive; i++ {
		alive = syscall.Kill(pid, 0) == nil
		if alive {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if alive {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("the worker's own child outlived the sidecar")
	}
}
