package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestLoadSettings(t *testing.T) {
	s, err := LoadSettings(backend.DataSourceInstanceSettings{
		JSONData:                []byte(`{"address":"grpc+tls://ts.example:7071","timeoutSeconds":5}`),
		DecryptedSecureJSONData: map[string]string{"token": " t0k \n"},
	})
	if err != nil || !s.TLS || s.Address != "ts.example:7071" || s.Token != "t0k" || s.Timeout() != 5*time.Second || s.Limit() != DefaultRowLimit {
		t.Errorf("got %+v, %v", s, err)
	}
	_, err = LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"address":"http://x","rowLimit":-1,"tlsSkipVerify":true}`)})
	for _, want := range []string{"jsonData.address", "jsonData.rowLimit", "jsonData.tls"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %s", err, want)
		}
	}
}

func TestStrings(t *testing.T) {
	for in, want := range map[string]string{
		`"a"`:             "[a]",
		`"a, b"`:          "[a b]",
		`"{a,b}"`:         "[a b]",
		`3`:               "[3]",
		`["x", 2, "All"]`: "[x 2]",
		`"$__all"`:        "[]",
		`null`:            "[]",
	} {
		var s Strings
		if err := s.UnmarshalJSON([]byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := strings.Join(append([]string{"["}, strings.Join(s, " "), "]"), ""); got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
}

func TestFindingsSQL(t *testing.T) {
	q, err := ParseQuery(backend.DataQuery{JSON: []byte(`{"queryType":"findings","run":"r'1","ranks":"0,2","severity":["warn"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	sql, err := q.SQL(backend.TimeRange{}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FROM findings", "run_id IN ('r''1')", "severity IN ('warn')", "(rank IS NULL OR rank IN (0, 2))"} {
		if !strings.Contains(sql, want) {
			t.Errorf("%s lacks %s", sql, want)
		}
	}
	if _, err := ParseQuery(backend.DataQuery{JSON: []byte(`{"format":"graph"}`)}); err == nil {
		t.Error("format graph accepted")
	}
	q, _ = ParseQuery(backend.DataQuery{JSON: []byte(`{"ranks":"x"}`)})
	if _, err := q.SQL(backend.TimeRange{}, 0); err == nil || !strings.Contains(err.Error(), "not a rank number") {
		t.Errorf("bad rank: %v", err)
	}
}

// TestToFrame builds the types DuckDB sends that FromArrowRecord rejects.
func TestToFrame(t *testing.T) {
	mem := memory.NewGoAllocator()
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 3}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "sev", Type: dictType, Nullable: true},
		{Name: "ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1682725898079292, 0}, []bool{true, false})
	b.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1682725898079292123, 1}, nil)
	b.Field(2).(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(1250), decimal128.FromI64(-5)}, nil)
	b.Field(3).(*array.Date32Builder).AppendValues([]arrow.Date32{19724, 0}, nil)
	db := b.Field(4).(*array.BinaryDictionaryBuilder)
	db.AppendString("warn")
	db.AppendNull()
	lb := b.Field(5).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
	lb.AppendNull()
	b.Field(6).(*array.Int64Builder).AppendValues([]int64{7, 8}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	f, err := ToFrame("A", sc, []arrow.RecordBatch{rec, rec})
	if err != nil {
		t.Fatal(err)
	}
	if f.Rows() != 4 {
		t.Fatalf("rows = %d", f.Rows())
	}
	get := func(col, row int) any {
		if v, ok := f.Fields[col].ConcreteAt(row); ok {
			return v
		}
		return nil
	}
	if got := get(0, 0).(time.Time); got.UnixNano() != 1682725898079292000 {
		t.Errorf("us timestamp = %d", got.UnixNano())
	}
	if get(0, 1) != nil {
		t.Errorf("null timestamp = %v", get(0, 1))
	}
	if got := get(1, 0).(time.Time); got.UnixNano() != 1682725898079292123 {
		t.Errorf("ns timestamp = %d", got.UnixNano())
	}
	if get(2, 0) != 1.25 || get(2, 1) != -0.005 {
		t.Errorf("decimal = %v, %v", get(2, 0), get(2, 1))
	}
	if got := get(3, 0).(time.Time); !got.Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("date = %s", got)
	}
	if get(4, 0) != "warn" || get(4, 1) != nil {
		t.Errorf("dictionary = %v, %v", get(4, 0), get(4, 1))
	}
	if get(5, 0) != "[1,2]" || get(5, 1) != nil {
		t.Errorf("list = %v, %v", get(5, 0), get(5, 1))
	}
	if get(6, 3) != int64(8) {
		t.Errorf("int64 = %v", get(6, 3))
	}
}

func TestToTimeSeries(t *testing.T) {
	ns := func(s int64) *int64 { v := s * 1e9; return &v }
	f := data.NewFrame("A",
		data.NewField("time", nil, []*int64{ns(3), ns(1), nil, ns(2)}),
		data.NewField("rank", nil, []*int32{ptr(int32(1)), ptr(int32(0)), ptr(int32(0)), ptr(int32(0))}),
		data.NewField("v", nil, []*float64{ptr(3.0), ptr(1.0), ptr(9.0), ptr(2.0)}),
	)
	out, err := ToTimeSeries(f)
	if err != nil {
		t.Fatal(err)
	}
	if out.TimeSeriesSchema().Type != data.TimeSeriesTypeWide || len(out.Fields) != 3 || out.Rows() != 3 {
		t.Fatalf("got %v", out.Fields)
	}
	if l := out.Fields[1].Labels["rank"]; l != "0" {
		t.Errorf("first series label rank = %q", l)
	}
	if v, _ := out.Fields[0].ConcreteAt(0); v.(time.Time).Unix() != 1 {
		t.Errorf("not sorted: %v", v)
	}
	if _, err := ToTimeSeries(data.NewFrame("B", data.NewField("x", nil, []*int64{ptr(int64(1))}))); err == nil || !strings.Contains(err.Error(), "needs a time column") {
		t.Errorf("no time column: %v", err)
	}
}

func TestClassify(t *testing.T) {
	s := Settings{Address: "h:1"}
	for _, c := range []struct {
		err  error
		set  Settings
		want problem
		msg  string
	}{
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), s, problemUnreachable, "server unreachable at h:1: connection refused"},
		{status.Error(codes.Unavailable, `tls: first record does not look like a TLS handshake`), Settings{Address: "h:1", TLS: true}, problemTLS, "does not speak TLS"},
		{status.Error(codes.Unavailable, `x509: certificate signed by unknown authority`), Settings{Address: "h:1", TLS: true}, problemTLS, "not trusted"},
		{status.Error(codes.Unauthenticated, "no"), s, problemAuth, "no token is set"},
		{status.Error(codes.PermissionDenied, "DELETE changes data"), s, problemRefused, "server refused: DELETE"},
		{status.Error(codes.InvalidArgument, "Parser Error"), s, problemQuery, "query failed: Parser Error"},
		{errors.New("odd"), s, problemQuery, "odd"},
	} {
		p, msg := classify(context.Background(), c.err, c.set)
		if p != c.want || !strings.Contains(msg, c.msg) {
			t.Errorf("%v: %d %q, want %d %q", c.err, p, msg, c.want, c.msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	if p, _ := classify(ctx, status.Error(codes.DeadlineExceeded, "x"), s); p != problemTimeout {
		t.Errorf("deadline: %d", p)
	}
}

func TestSchemaProblems(t *testing.T) {
	have := map[string]map[string]bool{}
	for tbl, cols := range RequiredSchema {
		have[tbl] = map[string]bool{}
		for _, c := range cols {
			have[tbl][c] = true
		}
	}
	if p := schemaProblems(have); len(p) != 0 {
		t.Errorf("complete schema: %v", p)
	}
	delete(have, "analyses")
	delete(have["findings"], "fix")
	got := strings.Join(schemaProblems(have), "; ")
	if got != "no table analyses; table findings lacks fix" {
		t.Errorf("problems = %q", got)
	}
}

func ptr[T any](v T) *T { return &v }
