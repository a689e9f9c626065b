// Command conformance-client is the Go SDK's conformance client. It speaks the client
// protocol of conformance/docs/client-protocol.md: JSON lines on stdin and stdout, bearers
// as length-prefixed frames on the descriptor named by --bearer-fd (or --bearer-fifo). It
// uses only the SDK's public API, performs each step it is told to, and reports what
// happened; it never decides whether a case passed.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

const protocolVersion = 1

func main() {
	bearerFD := flag.Int("bearer-fd", -1, "inherited descriptor carrying bearer frames")
	bearerFIFO := flag.String("bearer-fifo", "", "named pipe carrying bearer frames")
	flag.Parse()
	log.SetOutput(os.Stderr)
	log.SetPrefix("go-client: ")
	if err := rebuildAgainstSDKCopy(); err != nil {
		log.Fatalf("cannot run against the SDK copy: %v", err)
	}
	var bearers io.Reader
	switch {
	case *bearerFD >= 0:
		bearers = os.NewFile(uintptr(*bearerFD), "bearer-pipe")
	case *bearerFIFO != "":
		f, err := os.Open(*bearerFIFO)
		if err != nil {
			log.Fatalf("cannot open the bearer fifo: %v", err)
		}
		bearers = f
	default:
		log.Fatal("--bearer-fd or --bearer-fifo is required")
	}
	os.Exit(serve(os.Stdin, os.Stdout, bearers))
}

// The protocol's two streams, shared by the loop below and by sync points inside a case.
var (
	lines  *bufio.Scanner
	writer *bufio.Writer
)

func write(msg any) {
	data, err := json.Marshal(msg)
	if err != nil {
		log.Printf("cannot encode a message: %v", err)
		return
	}
	writer.Write(data)
	writer.WriteByte('\n')
	writer.Flush()
}

// nextMessage reads the next non-empty line as a JSON object; io.EOF once stdin closes.
func nextMessage() (map[string]any, error) {
	for lines.Scan() {
		line := bytes.TrimSpace(lines.Bytes())
		if len(line) == 0 {
			continue
		}
		var msg map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&msg); err != nil {
			return nil, fmt.Errorf("unreadable line: %w", err)
		}
		return msg, nil
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// waitForRelease tells the runner that a step reached its sync point and blocks until the
// runner releases it (it restarts or stops the worker meanwhile); the caller then goes on
// with the same SDK client and, inside a watch, the same iterator.
func waitForRelease(caseName, step string) error {
	write(map[string]any{"type": "sync", "case": caseName, "step": step})
	msg, err := nextMessage()
	if err != nil {
		return fmt.Errorf("waiting at sync point %s: %w", step, err)
	}
	if msg["type"] != "release" || msg["step"] != step {
		return fmt.Errorf("expected the release of sync point %s, got a %v message", step, msg["type"])
	}
	return nil
}

func serve(in io.Reader, out io.Writer, bearers io.Reader) int {
	lines = bufio.NewScanner(in)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	writer = bufio.NewWriter(out)
	for {
		msg, err := nextMessage()
		if err == io.EOF {
			return 0
		}
		if err != nil {
			log.Print(err)
			return 2
		}
		switch msg["type"] {
		case "hello":
			write(map[string]any{
				"type":             "client_hello",
				"protocol_version": protocolVersion,
				"sdk":              "go",
				"sdk_version":      colossus.Version,
				"features":         []string{"daemon", "sidecar", "reconnect_hook", "artifacts", "credential_calls"},
				"retry_budget":     retryBudget(),
			})
		case "shutdown":
			return 0
		case "case":
			write(runCase(msg, bearers))
		default:
			log.Printf("unknown message type %v", msg["type"])
			return 2
		}
	}
}

// retryBudget reports the policies every connection of this client uses: the SDK's
// defaults, which the client does not override.
func retryBudget() map[string]any {
	policy := colossus.DefaultRetry // reads and watch reconnects share it
	var elapsed any
	if policy.MaxElapsed > 0 {
		elapsed = policy.MaxElapsed.Seconds()
	}
	return map[string]any{
		"read_attempts":         policy.MaxAttempts,
		"watch_attempts":        policy.MaxAttempts,
		"watch_elapsed_seconds": elapsed,
	}
}

func readFrame(r io.Reader) (string, error) {
	var header [4]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return "", fmt.Errorf("bearer pipe closed")
	}
	body := make([]byte, binary.BigEndian.Uint32(header[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return "", fmt.Errorf("bearer pipe closed mid-frame")
	}
	return string(body), nil
}

func runCase(msg map[string]any, bearerPipe io.Reader) (result map[string]any) {
	name, _ := msg["case"].(string)
	conns, _ := msg["connections"].([]any)
	bearers := map[string]string{}
	for _, c := range conns {
		spec, _ := c.(map[string]any)
		if frame, _ := spec["bearer_frame"].(bool); frame {
			b, err := readFrame(bearerPipe)
			if err != nil {
				return map[string]any{"type": "result", "case": name, "steps": []any{}, "fatal": err.Error()}
			}
			bearers[spec["name"].(string)] = b
		}
	}
	log.Printf("case %s", name)
	run := newCaseRun(msg, bearers)
	defer run.close()
	defer func() {
		if r := recover(); r != nil {
			log.Printf("case %s panicked: %v", name, r)
			result = map[string]any{"type": "result", "case": name, "steps": []any{}, "fatal": fmt.Sprint("panic: ", r)}
		}
	}()
	return map[string]any{"type": "result", "case": name, "steps": run.run()}
}
