package colossus

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
)

// The shared, language-neutral parser vectors of conformance/vectors/: every SDK must
// give every vector the same verdict.
const vectorsDir = "../../conformance/vectors"

type vector struct {
	Name     string `json:"name"`
	Expect   string `json:"expect"`
	Reason   string `json:"reason"`
	Text     string `json:"text"`
	Endpoint string `json:"endpoint"`
	PEM      string `json:"pem"`
	Host     string `json:"host"`
	Bearer   string `json:"bearer"`
}

type vectorFile struct {
	Kind    string   `json:"kind"`
	Vectors []vector `json:"vectors"`
}

func loadVectors(tb testing.TB, file string) vectorFile {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(vectorsDir, file))
	if err != nil {
		tb.Fatalf("the shared vectors must be present: %v", err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	if len(f.Vectors) == 0 {
		tb.Fatalf("%s holds no vectors", file)
	}
	return f
}

// verdict maps an SDK error to the protocol's error kind, as the conformance client does.
func verdict(err error) string {
	switch {
	case err == nil:
		return "accept"
	case errors.Is(err, ErrTrust):
		return "trust"
	case errors.Is(err, ErrCredential):
		return "credential"
	case errors.Is(err, ErrSidecar):
		return "sidecar"
	}
	return "other: " + err.Error()
}

// parseVector runs the parser a vector's kind names.
func parseVector(kind string, v vector) error {
	switch kind {
	case "descriptor":
		_, err := ParseDescriptor([]byte(v.Text))
		return err
	case "endpoint":
		_, err := ParseEndpoint(v.Endpoint)
		return err
	case "certificate":
		_, err := parseLeafCertificate([]byte(v.PEM), v.Host)
		return err
	case "bearer":
		_, err := newSecret(v.Bearer)
		return err
	case "bootstrap_reply":
		_, err := parseBootstrapReply([]byte(v.Text))
		return err
	}
	return errors.New("unknown vector kind " + kind)
}

func TestSharedVectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(vectorsDir, "*.json"))
	if err != nil || len(files) < 5 {
		t.Fatalf("expected the five shared vector files, found %v (%v)", files, err)
	}
	total := 0
	for _, path := range files {
		f := loadVectors(t, filepath.Base(path))
		for _, v := range f.Vectors {
			total++
			t.Run(filepath.Base(path)+"/"+v.Name, func(t *testing.T) {
				err := parseVector(f.Kind, v)
				if got := verdict(err); got != v.Expect {
					t.Fatalf("%s %q: got %s, want %s", f.Kind, v.Name, got, v.Expect)
				}
				if err != nil {
					var e *Error
					if !errors.As(err, &e) || e.Message == "" {
						t.Fatalf("refusal is not a described *Error: %v", err)
					}
					// The same local reason in every SDK (docs/requirements.md, S9), no code.
					if e.Reason != v.Reason || e.Code != codes.OK {
						t.Fatalf("%s %q: got reason %q code %s, want reason %q and no code", f.Kind, v.Name, e.Reason, CodeName(e.Code), v.Reason)
					}
				}
			})
		}
	}
	t.Logf("%d shared vectors", total)
}
