package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
)

// natsCluster starts n nats-servers with JetStream clustered on loopback
// ports, as three pods of the official chart would be, and waits until
// JetStream has a leader. It returns the servers and their client URLs.
func natsCluster(t *testing.T, n int) ([]*natsserver.Server, []string) {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var srvs []*natsserver.Server
	var urls []string
	for i := range n {
		opts := &natsserver.Options{
			ServerName: fmt.Sprintf("nats-%d", i), Host: "127.0.0.1", Port: natsserver.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true, MaxPayload: 4 << 20,
			Cluster: natsserver.ClusterOpts{Name: "trainscope-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  natsserver.RoutesFromStr(strings.Join(routes, ",")),
		}
		s, err := natsserver.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatalf("nats-%d did not start", i)
		}
		srvs, urls = append(srvs, s), append(urls, s.ClientURL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's JetStream never got a leader: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return srvs, urls
}

// The fleet picture on loopback: three clustered nats-servers holding the
// stream and the lease buckets at replicas 3, two serve ingestors sharing
// its four partitions and archiving what they analyse, and a query node
// over that archive. One NATS node and one ingestor die mid-stream (the
// ingestor without handing its leases back, then restarting under its
// name and data, as a StatefulSet pod does). Every batch is committed
// exactly once across the two, every run is analysed by one ingestor,
// and the query node answers as analyze does over the same traces.
func TestServeOnANATSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS cluster and three servers")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	natsSrvs, urls := natsCluster(t, 3)
	natsURL := strings.Join(urls, ",")
	arch := t.TempDir()
	dataDirs := map[string]string{"ing-a": t.TempDir(), "ing-b": t.TempDir()}
	clocks := map[string]*testClock{"ing-a": newTestClock(), "ing-b": newTestClock()}
	srvs := map[string]*server.Server{}
	start := func(name string) {
		t.Helper()
		cfg, err := config.Load("")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight, cfg.Serve.Archive = dataDirs[name], "127.0.0.1:0", "", arch
		cfg.NATS.URL = natsURL
		cfg.Stream.Partitions, cfg.Stream.Replicas = 4, 3
		cfg.Ingest.Member, cfg.Ingest.Lease, cfg.Ingest.AckWait = name, 3*time.Second, 5*time.Second
		srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf, server.WithClock(clocks[name].Now, clocks[name].ticks))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		srvs[name] = srv
	}
	start("ing-a")
	start("ing-b")
	defer func() {
		for _, s := range srvs {
			s.Shutdown()
		}
	}()
	waitFor(t, "the partitions split two and two", func() bool {
		return len(srvs["ing-a"].Coordinator().Owned()) == 2 && len(srvs["ing-b"].Coordinator().Owned()) == 2
	})
	runs := []string{"job0", "job1", "job2", "job3", "job4"}
	sent := 0
	publish := func(id string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(ctx, append([]string{"publish", "--run", id, "--host", "node-1", "-q", "--nats-url", natsURL}, sampleRun...), &out, &errOut); code != 0 {
			t.Fatalf("publish %s: exit %d: %s", id, code, errOut.String())
		}
		m := regexp.MustCompile(`in (\d+) messages`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("publish said %q", out.String())
		}
		n, _ := strconv.Atoi(m[1])
		sent += n
	}
	committed := func() int64 {
		var n int64
		for _, s := range srvs {
			n += s.Stats().Messages.Load()
		}
		return n
	}
	publish(runs[0])
	publish(runs[1])
	waitFor(t, "the first batches committed", func() bool { return committed() > 0 })

	// a NATS node dies: the stream and the buckets keep their quorum
	natsSrvs[2].Shutdown()
	publish(runs[2])

	// an ingestor dies without handing its leases back: its connection
	// drops first, so the release cannot reach NATS and the leases lapse
	b := srvs["ing-b"]
	b.NATS().Close()
	b.Shutdown()
	delete(srvs, "ing-b")
	publish(runs[3])
	waitFor(t, "ing-a takes every partition once ing-b's leases lapse", func() bool { return len(srvs["ing-a"].Coordinator().Owned()) == 4 })
	publish(runs[4])
	// ing-b comes back under its name, with its database
	start("ing-b")

	// exactly once: every batch is in exactly one ledger
	ledgers := func() (total, distinct int) {
		ids := map[string]int{}
		for _, s := range srvs {
			s.StoreLock().Lock()
			rows, err := s.Store().Query(ctx, "SELECT msg_id FROM ingested_batches")
			if err != nil {
				s.StoreLock().Unlock()
				t.Fatal(err)
			}
			for rows.Next() {
				var id string
				rows.Scan(&id)
				ids[strings.TrimPrefix(id, "fwd:")]++
				total++
			}
			rows.Close()
			s.StoreLock().Unlock()
		}
		return total, len(ids)
	}
	waitFor(t, "every batch committed", func() bool {
		total, distinct := ledgers()
		return distinct == sent && total == sent
	})
	for _, c := range clocks {
		c.Advance(time.Minute)
	}
	analysedBy := map[string][]string{}
	waitFor(t, "a final report of every run", func() bool {
		clear(analysedBy)
		for name, s := range srvs {
			clocks[name].Tick()
			for _, id := range runs {
				if rr := s.Scheduler().Report(id); rr != nil && !rr.Partial {
					analysedBy[id] = append(analysedBy[id], name)
				}
			}
		}
		return len(analysedBy) == len(runs)
	})
	for _, id := range runs {
		if len(analysedBy[id]) != 1 {
			t.Errorf("run %s analysed by %v, want one ingestor", id, analysedBy[id])
		}
	}
	total, distinct := ledgers()
	t.Logf("sent %d batches; ledgers hold %d, %d distinct; runs analysed by %v", sent, total, distinct, analysedBy)
	if total != sent || distinct != sent {
		t.Errorf("ledgers hold %d rows, %d distinct, for %d batches sent", total, distinct, sent)
	}
	waitFor(t, "every run archived", func() bool {
		var n int64
		for _, s := range srvs {
			n += s.Scheduler().Archived.Load()
		}
		files, _ := filepath.Glob(filepath.Join(arch, "runs", "day=*", "run=*", "*.parquet"))
		return n >= int64(len(runs)) && len(files) == len(runs)
	})

	// the query node over the archive answers as analyze does
	qcfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	qcfg.Serve.HTTP, qcfg.Serve.Flight, qcfg.Serve.Archive, qcfg.Serve.QueryOnly = "127.0.0.1:0", "127.0.0.1:0", arch, true
	qn, err := server.StartQueryNode(ctx, qcfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer qn.Shutdown()
	// each run's final pass, whichever ingestor made it
	if got, want := sqlOut(t, "--server", qn.FlightAddr(), "SELECT run_id, partial FROM analyses ORDER BY ALL"),
		"run_id,partial\n"+strings.Join(runs, ",false\n")+",false\n"; got != want {
		t.Errorf("the query node's analyses:\n%s\nwant\n%s", got, want)
	}
	for _, id := range runs {
		db := filepath.Join(t.TempDir(), id+".duckdb")
		var out, errOut bytes.Buffer
		if code := run(ctx, append([]string{"analyze", "-q", "--run", id, "--host", "node-1", "--db", db, "-o", filepath.Join(t.TempDir(), "r.md")}, sampleRun...), &out, &errOut); code != 0 {
			t.Fatalf("analyze exit %d: %s", code, errOut.String())
		}
		for _, q := range []string{
			"SELECT * FROM findings WHERE run_id = '" + id + "' ORDER BY ALL",
			// std_ns differs in its last bits between two analyze runs too
			// (a parallel sum's order): compare 9 significant digits
			"SELECT * REPLACE (round(value, (8 - floor(log10(abs(value) + 1e-300)))::INTEGER) AS value) FROM metrics WHERE run_id = '" + id + "' ORDER BY ALL",
			"SELECT * FROM root_causes WHERE run_id = '" + id + "' ORDER BY ALL",
			"SELECT rank, count(*), sum(dur) FROM slices WHERE run_id = '" + id + "' GROUP BY ALL ORDER BY ALL",
			"SELECT node, entity, slow, bad FROM node_history WHERE run_id = '" + id + "' ORDER BY ALL",
			// a view over slices_detail and the analysis window, runs from two ingestors side by side
			"SELECT * FROM rank_steps WHERE run_id = '" + id + "' ORDER BY ALL",
		} {
			want := sqlOut(t, "--db", db, q)
			got := sqlOut(t, "--server", qn.FlightAddr(), q)
			if got != want {
				t.Errorf("run %s: %s\n%s", id, q, lineDiff(got, want))
			}
		}
	}
}

// sqlOut is what 'trainscope sql' prints for q against a database (--db)
// or a server (--server).
func sqlOut(t *testing.T, where, at, q string) string {
	t.Helper()
	out, errOut, err := runSQLArgs("--format", "csv", where, at, q)
	if err != nil {
		t.Fatalf("sql %s %s %q: %v: %s", where, at, q, err, errOut)
	}
	return out
}

// lineDiff names the lines only a or only b has ("query node" and
// "analyze"), a few of each.
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		switch {
		case n > 0:
			out = append(out, "query node only: "+l)
		case n < 0:
			out = append(out, "analyze only:    "+l)
		}
	}
	slices.Sort(out)
	return head(strings.Join(out, "\n"), 10)
}
