package server

import (
	"context"
	"net/http"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/live"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/ondemand"
	"github.com/trainscope/trainscope/internal/ondemand/odwire"
)

// withTrigger adds POST /runs/{id}/trigger (on-demand capture through
// the run's agents) to routes, when the server has NATS.
func (s *Server) withTrigger(routes http.Handler, cfg *config.Config, logf func(string, ...any)) http.Handler {
	if s.nc == nil {
		return routes
	}
	mux := http.NewServeMux()
	mux.Handle("/", routes)
	mux.Handle("POST /runs/{id}/trigger", odwire.TriggerHandler(s.nc, cfg.Stream.Cluster, time.Now, logf))
	return mux
}

// triggerRoutes lists the routes withTrigger mounts, for the API's index.
func (s *Server) triggerRoutes() []string {
	if s.nc == nil {
		return nil
	}
	return []string{"POST /runs/{id}/trigger  (on-demand capture through the run's agents)"}
}

// autoTrigger is serve.auto_trigger's automatic trigger, nil when off. Its
// detectors must be finding detectors of set.
func (s *Server) autoTrigger(cfg *config.Config, set *detectors.Set, now func() time.Time, logf func(string, ...any)) (*odwire.Auto, error) {
	ac := cfg.Serve.AutoTrigger
	if !ac.Enabled {
		return nil, nil
	}
	if err := ac.CheckDetectors(set.Names(detectors.KindFinding)); err != nil {
		return nil, &config.Error{Err: err}
	}
	cluster := cfg.Stream.Cluster
	send := func(ctx context.Context, m ondemand.TriggerMessage) ([]ondemand.TriggerReply, error) {
		return ondemand.Ask(ctx, s.nc, cluster, m, ondemand.Limits{}, 0, ac.Timeout)
	}
	logf("on-demand: automatic captures on findings of %v, at most one per run every %s and %d across runs", ac.Detectors, ac.Interval, ac.Max)
	return odwire.NewAuto(ac, now, send, logf), nil
}

// runScheduler ticks the scheduler, and after each look at the due runs
// lets auto (when on) read the reports.
func (s *Server) runScheduler(ctx context.Context, ticks <-chan time.Time, auto *odwire.Auto) {
	if auto == nil {
		s.sched.Run(ctx, ticks)
		return
	}
	defer auto.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		s.sched.Step(ctx)
		auto.After(ctx, reportsOf(s.sched.List()))
	}
}

func reportsOf(rs []*live.Report) []odwire.Report {
	out := make([]odwire.Report, 0, len(rs))
	for _, r := range rs {
		out = append(out, odwire.Report{Run: r.Run, At: r.At, JSON: r.JSON})
	}
	return out
}
