package ondemand

import (
	"fmt"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	clk := newClock()
	l := &Limiter{Every: 10 * time.Minute, Global: 2, Now: clk.Now}
	if ok, _, err := l.Allow("a"); !ok || err != nil {
		t.Fatal("first capture refused", err)
	}
	clk.Advance(time.Minute)
	ok, wait, err := l.Allow("a")
	if ok || wait != 9*time.Minute || err == nil {
		t.Fatalf("second capture of a: %v %v %v", ok, wait, err)
	}
	if ok, _, _ := l.Allow("b"); !ok {
		t.Fatal("b refused")
	}
	ok, wait, err = l.Allow("c")
	if ok || wait != 9*time.Minute || err == nil {
		t.Fatalf("over the global cap: %v %v %v", ok, wait, err)
	}
	clk.Advance(9 * time.Minute)
	if ok, _, err := l.Allow("a"); !ok {
		t.Fatalf("a after the interval: %v", err)
	}
	if ok, wait, _ := l.Allow("c"); ok || wait != time.Minute {
		t.Fatalf("c while b's capture is in the window: %v %v", ok, wait)
	}
	clk.Advance(time.Minute)
	if ok, _, err := l.Allow("c"); !ok {
		t.Fatalf("c after b's capture left the window: %v", err)
	}
	// a clock that steps back does not lock a run out
	clk.Advance(-time.Hour)
	if ok, _, err := l.Allow("b"); !ok {
		t.Fatalf("after the clock stepped back: %v", err)
	}
}

func TestLimiterForgetsOldKeys(t *testing.T) {
	clk := newClock()
	l := &Limiter{Every: time.Minute, Global: 100, MaxKeys: 8, Now: clk.Now}
	for i := range 8 {
		if ok, _, err := l.Allow(fmt.Sprint(i)); !ok {
			t.Fatal(err)
		}
	}
	if ok, _, _ := l.Allow("new"); ok {
		t.Fatal("more keys than the limiter keeps, all recent")
	}
	clk.Advance(time.Minute)
	if ok, _, err := l.Allow("new"); !ok || len(l.last) != 1 {
		t.Fatalf("old keys not forgotten: %v %d", err, len(l.last))
	}
}
