package colossustest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
	"github.com/obscuritylabs/colossus-sdks/sdk/go/colossustest"
)

// The fake worker in a test: start it, script the run it will produce, connect the SDK
// to it, then create the run and watch it to the end. In a test, pass the test's
// *testing.T to Start; an example has none, so this one lends it exampleT.
func Example() {
	t := &exampleT{}
	defer t.finish()

	w := colossustest.Start(t)
	w.Script(colossus.RunStatusSucceeded, "Hello, ", "world.")

	ctx := context.Background()
	client, err := colossus.Connect(ctx, w.DaemonOptions())
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer func() { _ = client.Close() }()

	created, err := client.Runs.Create(ctx, colossus.Text("greet the world"))
	if err != nil {
		fmt.Println("create:", err)
		return
	}
	fmt.Println("created", created.Run.RunID)
	for ev, err := range client.Runs.Watch(ctx, created.Run.RunID) {
		if err != nil {
			fmt.Println("watch:", err)
			return
		}
		switch p := ev.Payload.(type) {
		case *colossus.OutputDelta:
			fmt.Printf("%d output %q\n", ev.Sequence, p.Text)
		case *colossus.RunTerminated:
			fmt.Printf("%d terminated %s: %q\n", ev.Sequence, p.Status, p.Result.OutputText)
		}
	}
	fmt.Println("calls:", w.Calls())
	// Output:
	// created run_1
	// 1 output "Hello, "
	// 2 output "world."
	// 3 terminated SUCCEEDED: "Hello, world."
	// calls: [GetServerInfo CreateRun WatchRun GetRun]
}

// exampleT is the part of testing.TB that Start uses, for an example, which gets no
// *testing.T: a failure panics (failing the example) and finish runs the cleanups.
type exampleT struct {
	testing.TB
	dirs     []string
	cleanups []func()
}

func (*exampleT) Helper() {}

func (*exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *exampleT) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "colossustest-example-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

// finish runs the cleanups, last registered first, as a test does when it ends.
func (t *exampleT) finish() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
	for _, dir := range t.dirs {
		_ = os.RemoveAll(dir)
	}
}
