package colossus_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

// Every Go block of README.md, and the Go program `colossus-reference-worker dev` prints,
// builds and runs as a user would paste it into main.go of a module of their own. Each
// ```go block is preceded by a marker:
//
//	<!-- readme-test: run -->     a program on its own (the worker on PATH)
//	<!-- readme-test: daemon -->  a program for a running worker: the values a user copies
//	                              from enrolment ("wkr_...", "8cf2...7e3c") are filled in,
//	                              HOME holds ~/colossus and the bearer is piped to stdin
//
// A block without a marker fails. The worker is `dev` on ~/colossus.

var readmeBlock = regexp.MustCompile("(?s)(?:<!-- readme-test: ([^>]*?) -->\n)?```go\n(.*?)```")

const (
	instancePlaceholder = `"wkr_..."`
	pinPlaceholder      = `"8cf2...7e3c"`
)

type readmeProgram struct{ how, code string }

func readmePrograms(t *testing.T) []readmeProgram {
	t.Helper()
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeProgram
	for _, m := range readmeBlock.FindAllStringSubmatch(string(text), -1) {
		if m[1] != "run" && m[1] != "daemon" {
			t.Fatalf("README.md: a go block has marker %q, not run or daemon:\n%s", m[1], m[2])
		}
		blocks = append(blocks, readmeProgram{m[1], m[2]})
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no go blocks")
	}
	return blocks
}

// devWorker is `colossus-reference-worker dev --public-api-dir ~/colossus` with a private HOME.
type devWorker struct {
	home, banner, bearer, instanceID, pin string
}

func startDev(t *testing.T, exe string) *devWorker {
	t.Helper()
	home := privateDir(t, "home")
	cmd := exec.Command(exe, "dev", "--public-api-dir", filepath.Join(home, "colossus"))
	cmd.Env = append(os.Environ(), "HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	var banner strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		banner.WriteString(lines.Text() + "\n")
		if strings.HasPrefix(lines.Text(), "Stop with Ctrl-C") {
			break
		}
	}
	go func() { // keep reading, so dev never blocks on a full pipe
		for lines.Scan() {
		}
	}()
	d := &devWorker{home: home, banner: banner.String()}
	d.instanceID, d.pin = bannerField(t, d.banner, "instance ID"), bannerField(t, d.banner, "certificate SHA-256")
	bearer, err := os.ReadFile(filepath.Join(home, "colossus", "dev-app.bearer"))
	if err != nil {
		t.Fatalf("dev left no bearer file: %v\n%s\n%s", err, d.banner, stderr.String())
	}
	d.bearer = strings.TrimSpace(string(bearer))
	return d
}

func bannerField(t *testing.T, banner, name string) string {
	t.Helper()
	for _, line := range strings.Split(banner, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), name); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("%q is not in dev's banner:\n%s", name, banner)
	return ""
}

// buildProgram builds main.go in a fresh module that requires this SDK (replaced by this
// folder, so the program sees exactly the working tree) and returns the binary.
func buildProgram(t *testing.T, code string) string {
	t.Helper()
	sdk, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module readme\n\ngo 1.26.0\n\nrequire github.com/obscuritylabs/colossus-sdks/sdk/go v0.0.0\n\n" +
		"replace github.com/obscuritylabs/colossus-sdks/sdk/go => " + sdk + "\n"
	sums, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sums, "main.go": []byte(code)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod")
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", "app", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s\n--- main.go\n%s", strings.Join(args, " "), err, out, code)
		}
	}
	return filepath.Join(dir, "app")
}

func runProgram(t *testing.T, binary string, env []string, stdin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary)
	cmd.Dir = filepath.Dir(binary)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return string(out)
}

func TestReadmeGoBlocksRun(t *testing.T) {
	exe := colossus.ReferenceWorker(t)
	pathEnv := "PATH=" + filepath.Dir(exe) + string(os.PathListSeparator) + os.Getenv("PATH")
	var dev *devWorker
	for i, block := range readmePrograms(t) {
		switch block.how {
		case "run":
			out := runProgram(t, buildProgram(t, block.code), []string{pathEnv}, "")
			if strings.TrimSpace(out) == "" {
				t.Fatalf("block %d printed nothing", i)
			}
		case "daemon":
			if !strings.Contains(block.code, instancePlaceholder) || !strings.Contains(block.code, pinPlaceholder) {
				t.Fatalf("block %d: a daemon block shows %s and %s for the user to fill in", i, instancePlaceholder, pinPlaceholder)
			}
			if dev == nil {
				dev = startDev(t, exe)
			}
			code := strings.ReplaceAll(block.code, instancePlaceholder, quote(dev.instanceID))
			code = strings.ReplaceAll(code, pinPlaceholder, quote(dev.pin))
			out := runProgram(t, buildProgram(t, code), []string{pathEnv, "HOME=" + dev.home}, dev.bearer+"\n")
			if !strings.Contains(out, dev.instanceID) || strings.Contains(out, dev.bearer) {
				t.Fatalf("block %d: %s", i, out)
			}
		}
	}
}

// The Go program `dev` prints runs as pasted: connect, create, watch to the end.
func TestDevPrintsAGoProgramThatRuns(t *testing.T) {
	dev := startDev(t, colossus.ReferenceWorker(t))
	_, program, ok := strings.Cut(dev.banner, "--- Go")
	if !ok {
		t.Fatalf("no Go snippet in dev's banner:\n%s", dev.banner)
	}
	_, program, _ = strings.Cut(program, "---\n")
	program, _, _ = strings.Cut(program, "\nInspect runs:")
	program, _, _ = strings.Cut(program, "\n--- ") // the next SDK's snippet, when one follows
	out := runProgram(t, buildProgram(t, program), nil, "")
	if !strings.Contains(out, "*colossus.RunTerminated") || strings.Contains(out, dev.bearer) {
		t.Fatalf("%s", out)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
