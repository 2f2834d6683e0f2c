package detectors

import (
	"errors"
	"fmt"
)

// CausesConfig holds the thresholds of the cause graph (the config's
// causes section): a rank is a root cause when the critical path through
// the collectives runs on it alone for at least MinCostPct of the median
// step and MinCostNS, and its cost stands out from the other ranks' by a
// robust z-score of MinCostZ; a stall is one-off when one step holds
// OneOffShare of a rank's cost and at least OneOffNS. Every other cause
// must cost MinCostPct and MinCostNS a step too, and the verdict calls a
// run of several ranks balanced below MinCostPct.
//
// The zero CausesConfig stands for the defaults (DefaultCauses): Validate
// refuses a MinCostPct of 0, so no valid config is all zero.
type CausesConfig struct {
	MinCostPct  float64 `mapstructure:"min_cost_pct"`
	MinCostNS   float64 `mapstructure:"min_cost_ns"`
	MinCostZ    float64 `mapstructure:"min_cost_z"`
	OneOffShare float64 `mapstructure:"one_off_share"`
	OneOffNS    float64 `mapstructure:"one_off_ns"`
	// UntracedStepNS is the run's step time without the profiler, as the
	// user's training log gives it (analyze --untraced-step); 0 when not
	// known. Given, the traced median step less it is the profiler's own
	// cost, taken off the host-side causes instead of the per-event
	// estimate.
	UntracedStepNS float64 `mapstructure:"untraced_step_ns"`
}

// DefaultCauses is the cause graph's thresholds when the config sets none.
func DefaultCauses() CausesConfig {
	return CausesConfig{MinCostPct: 5, MinCostNS: 100e3, MinCostZ: 3, OneOffShare: 0.8, OneOffNS: 10e6}
}

// orDefaults is c, or the defaults for the zero CausesConfig.
func (c CausesConfig) orDefaults() CausesConfig {
	if c == (CausesConfig{}) {
		return DefaultCauses()
	}
	return c
}

// Validate reports every value out of its range, with its key path under
// prefix.
func (c CausesConfig) Validate(prefix string) error {
	var errs []error
	bad := func(key string, v float64, want string) {
		errs = append(errs, fmt.Errorf("%s.%s: %g, want %s", prefix, key, v, want))
	}
	if !(c.MinCostPct > 0 && c.MinCostPct <= 100) {
		bad("min_cost_pct", c.MinCostPct, "0 < pct <= 100 (percent of the median step)")
	}
	if !(c.MinCostNS >= 0) {
		bad("min_cost_ns", c.MinCostNS, ">= 0 (ns a step)")
	}
	if !(c.MinCostZ > 0) {
		bad("min_cost_z", c.MinCostZ, "> 0 (robust z-score)")
	}
	if !(c.OneOffShare > 0 && c.OneOffShare <= 1) {
		bad("one_off_share", c.OneOffShare, "0 < share <= 1 (of the rank's cost)")
	}
	if !(c.OneOffNS >= 0) {
		bad("one_off_ns", c.OneOffNS, ">= 0 (ns in one step)")
	}
	if !(c.UntracedStepNS >= 0) {
		bad("untraced_step_ns", c.UntracedStepNS, ">= 0 (ns a step without the profiler; 0: not known)")
	}
	return errors.Join(errs...)
}

// causesOf is the cause-graph config of the set that produced results (its
// detectors carry it), the defaults when there is none.
func causesOf(results []Result) CausesConfig {
	for _, res := range results {
		if res.Detector != nil && res.Detector.causes != (CausesConfig{}) {
			return res.Detector.causes
		}
	}
	return DefaultCauses()
}
