package agent

import (
	"context"
	"errors"
	"testing"
	"time"
)

// sourceFunc is a Source made of a function.
type sourceFunc func(ctx context.Context, n Node, once bool) error

func (f sourceFunc) Watch(ctx context.Context, n Node, once bool) error { return f(ctx, n, once) }

// Sources beside the folder are watched at once through the same node;
// when one stops, the others are stopped too and its error comes back.
func TestWatchAllSources(t *testing.T) {
	published := make(chan string, 2)
	n := Node{Publish: func(_ context.Context, run, path string) error {
		published <- run + ":" + path
		return nil
	}}
	folder := sourceFunc(func(ctx context.Context, n Node, once bool) error {
		n.Publish(ctx, "job", "rank0.json")
		<-ctx.Done() // a folder is watched until the agent stops
		return nil
	})
	boom := errors.New("capture failed")
	capture := sourceFunc(func(ctx context.Context, n Node, once bool) error {
		n.Publish(ctx, "job", "ondemand.json")
		return boom
	})
	done := make(chan error, 1)
	go func() { done <- watchAll(context.Background(), n, []Source{folder, capture}) }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Errorf("watchAll: %v, want the capture's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watchAll did not stop the folder when the capture stopped")
	}
	got := map[string]bool{<-published: true, <-published: true}
	if !got["job:rank0.json"] || !got["job:ondemand.json"] {
		t.Errorf("published %v", got)
	}
}
