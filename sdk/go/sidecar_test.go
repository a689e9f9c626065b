package colossus

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// referenceWorker finds the reference worker executable. The nox session sets
// COLOSSUS_REFERENCE_WORKER and COLOSSUS_REQUIRE_WORKER=1, so there a missing worker fails
// the test instead of skipping it.
func referenceWorker(t *testing.T) string {
	t.Helper()
	path := os.Getenv("COLOSSUS_REFERENCE_WORKER")
	if path == "" {
		path, _ = exec.LookPath("colossus-reference-worker")
	}
	if path == "" {
		if os.Getenv("COLOSSUS_REQUIRE_WORKER") == "1" {
			t.Fatal("COLOSSUS_REQUIRE_WORKER=1 but no reference worker was found (set COLOSSUS_REFERENCE_WORKER)")
		}
		t.Skip("no reference worker: set COLOSSUS_REFERENCE_WORKER to run the tests that need it")
	}
	return path
}

func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

func killAndWait(t *testing.T, c *Client) int {
	t.Helper()
	p := c.sidecar.process
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed worker was not noticed")
	}
	return pid
}

// S7: an unexpected exit is restarted by the next call, at most MaxRestarts times; the
// call that was in flight is not replayed; Close ends the whole process group; calls after
// the budget is spent keep failing with the typed sidecar error.
func TestSidecarRestartsAreBoundedAndCloseEndsTheGroup(t *testing.T) {
	exe := referenceWorker(t)
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := StartSidecar(ctx, SidecarOptions{Executable: exe, ApplicationID: "go-sidecar-tests", StateDir: state, MaxRestarts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	created, err := c.Runs.Create(ctx, Text("hello"))
	if err != nil {
		t.Fatal(err)
	}
	first := killAndWait(t, c)
	run, err := c.Runs.Get(ctx, created.Run.RunID)
	if err != nil || run.RunID != created.Run.RunID {
		t.Fatalf("after one restart: %v", err)
	}
	second := c.sidecar.process.cmd.Process.Pid
	if second == first || c.sidecar.restarts != 1 || groupAlive(first) {
		t.Fatalf("pids %d -> %d, restarts %d, old group alive %v", first, second, c.sidecar.restarts, groupAlive(first))
	}
	killAndWait(t, c)
	for range 2 {
		_, err = c.Runs.Get(ctx, created.Run.RunID)
		var e *Error
		if !errors.Is(err, ErrSidecar) || !errors.As(err, &e) || e.Reason != ReasonSidecarRestartsSpent {
			t.Fatalf("past the budget: %v", err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if groupAlive(second) {
		t.Fatal("the worker's process group outlived Close")
	}
}

func TestSidecarCloseEndsTheProcessGroup(t *testing.T) {
	exe := referenceWorker(t)
	c, err := StartSidecar(context.Background(), SidecarOptions{Executable: exe, ApplicationID: "go-sidecar-close"})
	if err != nil {
		t.Fatal(err)
	}
	pgid := c.sidecar.process.cmd.Process.Pid
	state := c.sidecar.ownedDir
	if !groupAlive(pgid) {
		t.Fatal("the worker is not running")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if groupAlive(pgid) {
		t.Fatal("the worker's process group outlived Close")
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Fatalf("the private state folder was not removed: %v", err)
	}
}

func TestSidecarOptionsAreValidated(t *testing.T) {
	for name, o := range map[string]SidecarOptions{
		"no executable":    {ApplicationID: "app"},
		"bad application":  {Executable: "x", ApplicationID: "has space"},
		"too many restart": {Executable: "x", ApplicationID: "app", MaxRestarts: 4},
		"relative state":   {Executable: "x", ApplicationID: "app", StateDir: "state"},
	} {
		_, err := StartSidecar(context.Background(), o)
		var e *Error
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Metadata["field"] == "" {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A missing program names itself and the fix, with the same reason in every SDK (S9).
	for _, program := range []string{"/nonexistent/worker", "colossus-no-such-worker-program"} {
		_, err := StartSidecar(context.Background(), SidecarOptions{Executable: program, ApplicationID: "app", MaxRestarts: -1})
		var e *Error
		if !errors.Is(err, ErrSidecar) || !errors.As(err, &e) || e.Reason != ReasonSidecarProgramNotFound ||
			e.Metadata["program"] != program || !strings.Contains(e.Message, program) || !strings.Contains(e.Message, "pip install ./conformance") {
			// What works: the worker is the colossus-conformance distribution in ./conformance.
			t.Errorf("missing executable %q: %v", program, err)
		}
	}
}

func TestKeyringProviderFailsTyped(t *testing.T) {
	_, err := KeyringCredentialProvider{Service: "colossus-go-sdk-test", Account: "nobody-" + time.Now().Format("150405.000")}.Bearer(context.Background())
	var e *Error
	if !errors.Is(err, ErrCredential) || !errors.As(err, &e) {
		t.Fatalf("err %v", err)
	}
	// Without a keyring service (headless Linux, CI) the error must point to --bearer-fd;
	// with one, the entry simply does not exist.
	if !strings.Contains(e.Message, "--bearer-fd") && !strings.Contains(e.Message, "no bearer is stored") {
		t.Fatalf("unhelpful message: %s", e.Message)
	}
	if _, err := (KeyringCredentialProvider{}).Bearer(context.Background()); !errors.Is(err, ErrCredential) {
		t.Fatalf("empty names: %v", err)
	}
}
