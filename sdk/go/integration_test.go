package colossus_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

// Integration tests against the real reference worker over real TLS. The nox session
// sets COLOSSUS_REFERENCE_WORKER and COLOSSUS_REQUIRE_WORKER=1, so there a missing worker
// fails instead of skipping.

func privateDir(t *testing.T, name string) string {
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func script(lines ...string) []colossus.InputPart {
	return colossus.Text("colossus-script v1\n" + strings.Join(lines, "\n") + "\n")
}

func watchAll(t *testing.T, c *colossus.Client, runID string, opts ...colossus.CallOption) ([]colossus.RunEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var events []colossus.RunEvent
	for ev, err := range c.Runs.Watch(ctx, runID, opts...) {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, nil
}

func outputText(events []colossus.RunEvent) string {
	var b strings.Builder
	for _, e := range events {
		if d, ok := e.Payload.(*colossus.OutputDelta); ok {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

func TestIntegrationSidecar(t *testing.T) {
	exe := colossus.ReferenceWorker(t)
	ctx := context.Background()
	c, err := colossus.StartSidecar(ctx, colossus.SidecarOptions{
		Executable: exe, ApplicationID: "go-sdk-tests", StateDir: privateDir(t, "state"),
		Scopes: []string{"runs:execute", "runs:read", "runs:control", "prompts:respond", "artifacts:read", "artifacts:write"},
	})
	if err != nil {
		t.Fatalf("start sidecar: %v", err)
	}
	defer c.Close()
	if mode := c.ServerInfo().DeploymentMode; mode != colossus.DeploymentModeSidecar {
		t.Fatalf("mode %s", mode)
	}
	created, err := c.Runs.Create(ctx, script("say hello", "ask Continue? | yes | no", "say done"))
	if err != nil {
		t.Fatal(err)
	}
	var events []colossus.RunEvent
	for ev, err := range c.Runs.Watch(ctx, created.Run.RunID) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
		if req, ok := ev.Payload.(*colossus.InteractionRequested); ok {
			if _, err := c.Runs.Respond(ctx, created.Run.RunID, req.Interaction.InteractionID, colossus.PromptAnswer{Choice: "yes"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := outputText(events); got != "hellodone" {
		t.Fatalf("output %q", got)
	}
	for i, e := range events {
		if e.Sequence != uint64(i+1) {
			t.Fatalf("event %d has sequence %d", i, e.Sequence)
		}
	}
	run, err := c.Runs.Get(ctx, created.Run.RunID)
	if err != nil || run.Status != colossus.RunStatusSucceeded || run.LastSequence != uint64(len(events)) {
		t.Fatalf("run %+v err %v", run, err)
	}
	if c.ServerInfo().HasCapability(colossus.CapabilityArtifacts) {
		data := []byte(strings.Repeat("artifact bytes ", 10000))
		art, err := c.Artifacts.Upload(ctx, data, "text/plain", colossus.WithDisplayName("notes.txt"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Artifacts.Download(ctx, art.ArtifactID)
		if err != nil || string(got.Data) != string(data) {
			t.Fatalf("download: %v", err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Runs.Get(ctx, created.Run.RunID); !errors.Is(err, colossus.ErrClientClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// daemon is an enrolled reference worker serving a private discovery folder.
type daemon struct {
	exe, dir, port string
	instanceID     string
	pin            string
	bearer         string
	cmd            *exec.Cmd
}

func enrollDaemon(t *testing.T) *daemon {
	exe := colossus.ReferenceWorker(t)
	d := &daemon{exe: exe, dir: privateDir(t, "public-api")}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--public-api-dir", d.dir, "--enroll-application", "go-sdk-tests", "--role", "default",
		"--bearer-fd", "3", "--output", "json"}
	for _, s := range []string{"runs:execute", "runs:read", "runs:control", "prompts:respond"} {
		args = append(args, "--scope", s)
	}
	cmd := exec.Command(exe, args...)
	cmd.ExtraFiles = []*os.File{w}
	out, err := cmd.Output()
	w.Close()
	secret := make([]byte, 512)
	n, _ := r.Read(secret)
	r.Close()
	if err != nil {
		t.Fatalf("enrol: %v", err)
	}
	var info struct {
		InstanceID string `json:"instance_id"`
		Pin        string `json:"certificate_sha256"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("enrol output: %v", err)
	}
	d.instanceID, d.pin, d.bearer = info.InstanceID, info.Pin, strings.TrimSpace(string(secret[:n]))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.port = strconv.Itoa(lis.Addr().(*net.TCPAddr).Port)
	lis.Close()
	d.start(t)
	t.Cleanup(d.stop)
	return d
}

func (d *daemon) start(t *testing.T) {
	t.Helper()
	if err := d.restart(); err != nil {
		t.Fatal(err)
	}
}

// restart starts the worker on the same folder and port and waits for its descriptor.
func (d *daemon) restart() error {
	_ = os.Remove(filepath.Join(d.dir, "endpoint.json"))
	d.cmd = exec.Command(d.exe, "--public-api-dir", d.dir, "--port", d.port)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		return err
	}
	for range 600 {
		if _, err := os.Stat(filepath.Join(d.dir, "endpoint.json")); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the worker did not publish endpoint.json")
}

func (d *daemon) stop() {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		_ = d.cmd.Wait()
		d.cmd = nil
	}
}

func (d *daemon) connect(t *testing.T) *colossus.Client {
	t.Helper()
	provider, err := colossus.NewInMemoryCredentialProvider(d.bearer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := colossus.Connect(context.Background(), colossus.DaemonOptions{
		PublicAPIDir: d.dir, ExpectedInstanceID: d.instanceID, ExpectedCertificateSHA256: d.pin, Credentials: provider,
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestIntegrationDaemonIdempotencyListAndCancel(t *testing.T) {
	d := enrollDaemon(t)
	c := d.connect(t)
	ctx := context.Background()
	first, err := c.Runs.Create(ctx, script("say one"), colossus.WithIdempotencyKey("go-integration-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Runs.Create(ctx, script("say one"), colossus.WithIdempotencyKey("go-integration-1"))
	if err != nil || !again.Replayed || again.Run.RunID != first.Run.RunID {
		t.Fatalf("replay: %+v %v", again, err)
	}
	_, err = c.Runs.Create(ctx, script("say other"), colossus.WithIdempotencyKey("go-integration-1"))
	if !errors.Is(err, colossus.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	held, err := c.Runs.Create(ctx, script("sleep forever"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Runs.Cancel(ctx, held.Run.RunID); err != nil {
		t.Fatal(err)
	}
	events, err := watchAll(t, c, held.Run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	last, ok := events[len(events)-1].Payload.(*colossus.RunTerminated)
	if !ok || last.Status != colossus.RunStatusCancelled {
		t.Fatalf("last event %+v", events[len(events)-1].Payload)
	}
	seen := map[string]bool{}
	for run, err := range c.Runs.List(ctx, colossus.WithPageSize(1)) {
		if err != nil {
			t.Fatal(err)
		}
		seen[run.RunID] = true
	}
	if !seen[first.Run.RunID] || !seen[held.Run.RunID] {
		t.Fatalf("list missed runs: %v", seen)
	}
}

// A worker restart of a few seconds must not end a watch: the reconnect budget has an
// elapsed-time part and a minimum total wait. The worker is stopped and started again
// while the watch is reconnecting.
func TestIntegrationWatchSurvivesWorkerRestart(t *testing.T) {
	d := enrollDaemon(t)
	c := d.connect(t)
	ctx := context.Background()
	created, err := c.Runs.Create(ctx, script("say before", "sleep 3000", "say after"))
	if err != nil {
		t.Fatal(err)
	}
	var progress colossus.WatchProgress
	var events []colossus.RunEvent
	restarted := make(chan error, 1)
	for ev, err := range c.Runs.Watch(ctx, created.Run.RunID, colossus.WithProgress(&progress)) {
		if err != nil {
			t.Fatalf("the restart ended the watch: %v (after %d events)", err, len(events))
		}
		events = append(events, ev)
		if delta, ok := ev.Payload.(*colossus.OutputDelta); ok && delta.Text == "before" {
			d.stop()
			go func() { restarted <- d.restart() }()
		}
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	for i, e := range events {
		if e.Sequence != uint64(i+1) {
			t.Fatalf("event %d has sequence %d", i, e.Sequence)
		}
	}
	if _, ok := events[len(events)-1].Payload.(*colossus.RunTerminated); !ok || !progress.Completed() || progress.Reconnects() < 1 {
		t.Fatalf("completed=%v reconnects=%d", progress.Completed(), progress.Reconnects())
	}
}
