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

func serve(in io.Reader, out io.Writer, bearers io.Reader) int {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	writer := bufio.NewWriter(out)
	write := func(msg any) {
		data, err := json.Marshal(msg)
		if err != nil {
			log.Printf("cannot encode a message: %v", err)
			return
		}
		writer.Write(data)
		writer.WriteByte('\n')
		writer.Flush()
	}
	for scanner.Scan() {
		line := bytes.TrimSpace(scanner.Bytes())
		if len(line) == 0 {
			continue
		}
		var msg map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&msg); err != nil {
			log.Printf("unreadable line: %v", err)
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
	return 0
}

// retryBudget reports the policies every connection of this client uses: the SDK's
// defaults, which the client does not override.
func retryBudget() map[string]any {
	read, watch := colossus.DefaultReadRetry, colossus.DefaultWatchRetry
	var elapsed any
	if watch.MaxElapsed > 0 {
		elapsed = watch.MaxElapsed.Seconds()
	}
	return map[string]any{
		"read_attempts":         read.MaxAttempts + 1,
		"watch_attempts":        watch.MaxAttempts + 1,
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
