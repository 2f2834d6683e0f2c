package causes

import (
	"strconv"
	"testing"
)

// A rank's typical cost: the median per step from its onset, so that a
// fault starting mid-window is not averaged away and a hiccup does not
// make a rank slow. Values are µs held up per step 1..7.
func TestTypicalCost(t *testing.T) {
	steps := []int{1, 2, 3, 4, 5, 6, 7}
	for _, c := range []struct {
		name  string
		per   []float64
		cost  float64
		first int
	}{
		{"every step", []float64{100, 120, 90, 110, 100, 105, 95}, 100, 1},
		{"from step 4 on", []float64{5, 10, 3, 900, 1000, 1100, 950}, 975, 4},
		// an onset in step 6 shows in steps 6 and 7: the median of the two
		{"late onset", []float64{20, 5, 2, 10, 8, 1500, 2800}, 2150, 6},
		// a hiccup in step 6 alone is over by step 7: the whole window's median
		{"hiccup near the end", []float64{20, 5, 2, 10, 8, 1500, 30}, 10, 0},
		{"hiccup in the last step", []float64{20, 5, 2, 10, 8, 12, 3000}, 10, 0},
	} {
		a := &lateAgg{byStep: map[string]float64{}}
		for i, v := range c.per {
			a.byStep[strconv.Itoa(i+1)] = v
		}
		if cost, first := typicalCost(a, steps); cost != c.cost || first != c.first {
			t.Errorf("%s: cost %v from step %d, want %v from %d", c.name, cost, first, c.cost, c.first)
		}
	}
}
