package colossus

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOwnerOnlyFileChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "{}", 0o600)
	if _, err := readOwnerOnlyFile(good, 16, ErrDescriptor); err != nil {
		t.Fatalf("a private file was refused: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"readable by others": write("open", "{}", 0o644),
		"group writable":     write("group", "{}", 0o620),
		"oversized":          write("big", strings.Repeat("x", 17), 0o600),
		"symbolic link":      link,
		"fifo":               fifo, // must be refused without blocking on a writer
		"directory":          dir,
		"missing":            filepath.Join(dir, "nope"),
	} {
		_, err := readOwnerOnlyFile(path, 16, ErrDescriptor)
		var e *Error
		if !errors.Is(err, ErrDescriptor) || !errors.As(err, &e) || e.Metadata["field"] == "" {
			t.Errorf("%s: err %v, want a descriptor error naming the file", name, err)
		}
	}
}

func TestPrivateDirChecks(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o755)
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	_ = os.Symlink(private, link)
	if err := checkPrivateDir(private, ErrDescriptor, "dir"); err != nil {
		t.Fatalf("a private directory was refused: %v", err)
	}
	for _, p := range []string{open, link, filepath.Join(base, "missing")} {
		if err := checkPrivateDir(p, ErrDescriptor, "dir"); !errors.Is(err, ErrDescriptor) {
			t.Errorf("%s: err %v", p, err)
		}
	}
}

func TestDiscoveryComparesWithTheProvisionedIdentityOnly(t *testing.T) {
	cert := newCert(t, false)
	w := &fakeWorker{cert: cert, addr: "127.0.0.1:4242"}
	dir := w.writeDiscovery(t)
	if _, err := discover(dir, "wkr_test", cert.pin); err != nil {
		t.Fatalf("genuine files refused: %v", err)
	}
	other := newCert(t, false).pin
	if _, err := discover(dir, "wkr_test", other); !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("another pin: %v", err)
	}
	if _, err := discover(dir, "wkr_other", cert.pin); !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("another instance: %v", err)
	}
	// A certificate file that does not hash to the descriptor's pin.
	if err := os.WriteFile(filepath.Join(dir, certificateFile), newCert(t, false).pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := discover(dir, "wkr_test", cert.pin); !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("swapped certificate: %v", err)
	}
}
