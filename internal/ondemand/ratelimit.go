package ondemand

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// Limiter rate-limits automatic captures: at most one per key (a run)
// every Every, and at most Global captures across keys in any Every. A
// counter detector asks Allow before it sends a trigger, so a run that
// stays slow is captured once, then again only after Every. The clock is
// injected; nothing here waits.
type Limiter struct {
	Every  time.Duration // per-key interval (30 min when 0)
	Global int           // captures across keys per Every (4 when 0)
	// MaxKeys bounds the keys remembered (4096 when 0); keys older than
	// Every are forgotten first.
	MaxKeys int
	Now     func() time.Time

	mu     sync.Mutex
	last   map[string]time.Time
	recent []time.Time // grants within the last Every
}

func (l *Limiter) every() time.Duration {
	if l.Every <= 0 {
		return 30 * time.Minute
	}
	return l.Every
}

func (l *Limiter) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

// Allow says whether key may be captured now, and records the capture if
// so. Otherwise it says how long until it may, and why.
func (l *Limiter) Allow(key string) (bool, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now, every := l.now(), l.every()
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	if t, ok := l.last[key]; ok && now.Sub(t) < every && !now.Before(t) {
		wait := t.Add(every).Sub(now)
		return false, wait, fmt.Errorf("%s was captured %v ago; next in %v", key, now.Sub(t).Round(time.Second), wait.Round(time.Second))
	}
	kept := l.recent[:0]
	for _, t := range l.recent {
		if now.Sub(t) < every && !now.Before(t) { // a grant "in the future" is from before the clock stepped back
			kept = append(kept, t)
		}
	}
	l.recent = kept
	global := l.Global
	if global <= 0 {
		global = 4
	}
	if len(l.recent) >= global {
		wait := slices.MinFunc(l.recent, time.Time.Compare).Add(every).Sub(now)
		return false, wait, fmt.Errorf("%d captures in the last %v across runs; next in %v", len(l.recent), every, wait.Round(time.Second))
	}
	maxKeys := l.MaxKeys
	if maxKeys <= 0 {
		maxKeys = 4096
	}
	if len(l.last) >= maxKeys {
		for k, t := range l.last {
			if now.Sub(t) >= every || now.Before(t) {
				delete(l.last, k)
			}
		}
		maxKeys := l.MaxKeys
		if maxKeys <= 0 {
			maxKeys = 4096
		}
		if len(l.last) >= maxKeys {
			return false, every, fmt.Errorf("%d runs captured in the last %v", len(l.last), every)
		}
	}
	l.last[key] = now
	l.recent = append(l.recent, now)
	return true, 0, nil
}
