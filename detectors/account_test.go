package detectors_test

import (
	"context"
	"testing"

	"github.com/trainscope/trainscope/detectors/mdfmt"
)

// The step-time account against an independent computation on real
// traces: per rank, the time the account finds the GPU busy (compute,
// exposed communication, copies) over its windows equals the union of the
// trace's GPU activities clipped to the same span, computed in SQL
// (interval_union); and the windows' idle is the rest.
func TestAccountAgainstSQL(t *testing.T) {
	for _, rel := range []string{
		"tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
		"hta/tests__data__nccl_parser_config__nccl_data.json.gz",
		"hta/tests__data__negative_queue_length_values_check__rank0.json.gz",
	} {
		t.Run(rel, func(t *testing.T) {
			dir := corpusDir(rel)(t)
			st := loadRuns(t, map[string]string{"r": dir})
			defer st.Close()
			rows, err := st.Query(context.Background(), `
WITH span AS (SELECT rank, min(start_ns) AS lo, max(end_ns) AS hi FROM step_account GROUP BY rank),
acct AS (
    SELECT rank, sum(ns) FILTER (WHERE category <> 'idle') AS busy, sum(ns) FILTER (WHERE category = 'idle') AS idle,
           sum(ns) AS total FROM step_account GROUP BY rank),
gpu AS (
    SELECT s.rank AS g, greatest(s.ts, sp.lo) AS s, least(s.ts + s.dur, sp.hi) AS e
    FROM slices s JOIN span sp ON sp.rank = s.rank
    WHERE s.kind IN ('kernel', 'comm', 'memcpy', 'memset') AND s.dur >= 0
      AND s.ts < sp.hi AND s.ts + s.dur > sp.lo),
u AS (SELECT g AS rank, sum(e - s) AS busy FROM interval_union(gpu) GROUP BY g)
SELECT a.rank, a.busy, coalesce(u.busy, 0), a.idle, a.total, sp.hi - sp.lo
FROM acct a JOIN span sp USING (rank) LEFT JOIN u USING (rank) ORDER BY a.rank`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				var rank int
				var busy, sqlBusy, idle, total, span int64
				if err := rows.Scan(&rank, &busy, &sqlBusy, &idle, &total, &span); err != nil {
					t.Fatal(err)
				}
				n++
				if busy != sqlBusy {
					t.Errorf("rank %d: the account's busy time %d ns, the union of GPU activities %d ns", rank, busy, sqlBusy)
				}
				if total != span || busy+idle != total {
					t.Errorf("rank %d: windows sum to %d ns over a %d ns span (busy %d + idle %d)", rank, total, span, busy, idle)
				}
				t.Logf("rank %d: %s busy, %s idle over %s", rank, mdfmt.Duration(float64(busy)), mdfmt.Duration(float64(idle)), mdfmt.Duration(float64(span)))
			}
			if n == 0 {
				t.Fatal("no account rows")
			}
		})
	}
}
