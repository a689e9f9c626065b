package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

// worker is an enrolled reference worker serving a private discovery folder.
type worker struct {
	dir, instanceID, pin, bearer string
	cmd                          *exec.Cmd
}

func startWorker(exe, dir string) (*worker, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	enrol := exec.Command(exe, "--public-api-dir", dir, "--enroll-application", "go-bench", "--role", "default",
		"--scope", "runs:execute", "--scope", "runs:read", "--scope", "runs:control", "--bearer-fd", "3", "--output", "json")
	enrol.ExtraFiles = []*os.File{wr}
	out, err := enrol.Output()
	wr.Close()
	buf := make([]byte, 512)
	n, _ := r.Read(buf)
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("enrol: %w", err)
	}
	var info struct {
		InstanceID string `json:"instance_id"`
		Pin        string `json:"certificate_sha256"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, err
	}
	w := &worker{dir: dir, instanceID: info.InstanceID, pin: info.Pin, bearer: strings.TrimSpace(string(buf[:n]))}
	w.cmd = exec.Command(exe, "--public-api-dir", dir)
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	for range 600 {
		if _, err := os.Stat(filepath.Join(dir, "endpoint.json")); err == nil {
			return w, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.stop()
	return nil, errors.New("the worker did not publish endpoint.json")
}

func (w *worker) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	_ = w.cmd.Wait()
}

func (w *worker) options() colossus.DaemonOptions {
	provider, err := colossus.NewInMemoryCredentialProvider(w.bearer)
	if err != nil {
		panic(err)
	}
	return colossus.DaemonOptions{PublicAPIDir: w.dir, ExpectedInstanceID: w.instanceID,
		ExpectedCertificateSHA256: w.pin, Credentials: provider}
}
