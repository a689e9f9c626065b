package colossus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// The Go verdict program of conformance/parsers_diff: with -parsers-diff, the test binary
// reads JSON lines {"kind": ..., <vector members>} on stdin and prints one verdict line
// per input, from the same parsers TestSharedVectors calls.
var parsersDiff = flag.Bool("parsers-diff", false, "answer conformance/parsers_diff inputs on stdin")

type diffInput struct {
	Kind string `json:"kind"`
	vector
}

type diffVerdict struct {
	Verdict string `json:"verdict"`
	Error   string `json:"error,omitempty"`
}

// answerVerdicts writes one verdict line per input line; a line that is not an input
// stops it, since the driver's batch would no longer line up.
func answerVerdicts(in io.Reader, out io.Writer) error {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 0, 1<<20), 1<<24)
	enc := json.NewEncoder(out)
	for scanner.Scan() {
		var input diffInput
		if err := json.Unmarshal(scanner.Bytes(), &input); err != nil {
			return err
		}
		err := parseVector(input.Kind, input.vector)
		answer := diffVerdict{Verdict: verdict(err)}
		var e *Error
		if errors.As(err, &e) {
			answer.Error = e.kind.name
		}
		if err := enc.Encode(answer); err != nil {
			return err
		}
	}
	return scanner.Err()
}

func TestParsersDiffVerdicts(t *testing.T) {
	if *parsersDiff {
		if err := answerVerdicts(os.Stdin, os.Stdout); err != nil {
			t.Fatal(err)
		}
		return
	}
	// Without the flag, the program answers a small batch: one line each, in order.
	in := strings.Join([]string{
		`{"kind": "endpoint", "endpoint": "https://127.0.0.1:1"}`,
		`{"kind": "endpoint", "endpoint": "https://localhost:1"}`,
		`{"kind": "bearer", "bearer": "short"}`,
		`{"kind": "bootstrap_reply", "text": "nope"}`,
	}, "\n")
	var out bytes.Buffer
	if err := answerVerdicts(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := `{"verdict":"accept"}
{"verdict":"trust","error":"descriptor rejected"}
{"verdict":"credential","error":"credential rejected"}
{"verdict":"sidecar","error":"sidecar failure"}
`
	if out.String() != want {
		t.Fatalf("verdicts:\n%s\nwant:\n%s", out.String(), want)
	}
}
