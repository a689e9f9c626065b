package colossus_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

// TestExamplePrograms runs each program under examples/ against the reference worker.
func TestExamplePrograms(t *testing.T) {
	exe := colossus.ReferenceWorker(t)
	want := map[string]string{
		"quickstart_sidecar": "run SUCCEEDED",
		"watch_resume":       "4: three",
		"errors":             "not found: true",
	}
	for name, expected := range want {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("go", "run", "./examples/"+name)
			cmd.Env = append(os.Environ(), "COLOSSUS_REFERENCE_WORKER="+exe)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), expected) {
				t.Fatalf("%s: %v\n%s", name, err, out)
			}
		})
	}
}

func TestExampleDaemonProgram(t *testing.T) {
	d := enrollDaemon(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "./examples/daemon", "--public-api-dir", d.dir,
		"--instance-id", d.instanceID, "--pin", d.pin, "--bearer-fd", "3")
	cmd.ExtraFiles = []*os.File{r}
	go func() {
		_, _ = w.WriteString(d.bearer)
		_ = w.Close()
	}()
	out, err := cmd.CombinedOutput()
	r.Close()
	if err != nil || !strings.Contains(string(out), "connected to "+d.instanceID+" (SHARED_DAEMON)") {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), d.bearer) {
		t.Fatal("the example printed the bearer")
	}
}
