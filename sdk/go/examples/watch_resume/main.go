// Command watch_resume reads the first events of a run, keeps the cursor, and resumes
// from it in a second watch: every event arrives exactly once across the two.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

func main() {
	ctx := context.Background()
	exe := os.Getenv("COLOSSUS_REFERENCE_WORKER")
	if exe == "" {
		exe = "colossus-reference-worker"
	}
	client, err := colossus.StartSidecar(ctx, colossus.SidecarOptions{Executable: exe, ApplicationID: "watch-resume"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	created, err := client.Runs.Create(ctx, colossus.Text("colossus-script v1\nsay one\nsay two\nsay three\n"))
	if err != nil {
		log.Fatal(err)
	}
	runID := created.Run.RunID

	// First reader: stop after two events; the progress keeps the cursor.
	var progress colossus.WatchProgress
	seen := 0
	for _, err := range client.Runs.Watch(ctx, runID, colossus.WithProgress(&progress)) {
		if err != nil {
			log.Fatal(err)
		}
		if seen++; seen == 2 {
			break // leaving the loop closes the stream; the run goes on
		}
	}
	cursor := progress.LastSequence()
	fmt.Printf("stopped after sequence %d\n", cursor)

	// Second reader (could be another process): continue after the stored cursor.
	for event, err := range client.Runs.Watch(ctx, runID, colossus.WithAfterSequence(cursor)) {
		if err != nil {
			log.Fatal(err)
		}
		if d, ok := event.Payload.(*colossus.OutputDelta); ok {
			fmt.Printf("%d: %s\n", event.Sequence, d.Text)
		}
	}
}
