package plugin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// ToFrame converts a query's Arrow records into one frame. Every field is
// nullable. Type mapping, chosen so that panels and alerting see plain
// numbers and real times:
//
//	integers, floats, bools      the same Go type
//	TIMESTAMP (any unit, zone)   time, to the nanosecond
//	DATE32/DATE64                time at midnight UTC
//	DECIMAL                      float64
//	strings, dictionary          string (dictionaries decoded)
//	lists, structs, maps, other  string, as JSON
func ToFrame(name string, sc *arrow.Schema, recs []arrow.RecordBatch) (*data.Frame, error) {
	frame := data.NewFrame(name)
	for i, f := range sc.Fields() {
		field, err := convertColumn(f, i, recs)
		if err != nil {
			return nil, fmt.Errorf("column %s (%s): %w", f.Name, f.Type, err)
		}
		frame.Fields = append(frame.Fields, field)
	}
	return frame, nil
}

func convertColumn(f arrow.Field, col int, recs []arrow.RecordBatch) (*data.Field, error) {
	var n int
	for _, r := range recs {
		n += int(r.NumRows())
	}
	typ := f.Type
	if d, ok := typ.(*arrow.DictionaryType); ok {
		typ = d.ValueType
	}
	var vals any
	switch typ.ID() {
	case arrow.BOOL:
		vals = collect(recs, col, n, func(a arrow.Array, i int) bool { return a.(*array.Boolean).Value(i) })
	case arrow.INT8:
		vals = collect(recs, col, n, func(a arrow.Array, i int) int8 { return a.(*array.Int8).Value(i) })
	case arrow.INT16:
		vals = collect(recs, col, n, func(a arrow.Array, i int) int16 { return a.(*array.Int16).Value(i) })
	case arrow.INT32:
		vals = collect(recs, col, n, func(a arrow.Array, i int) int32 { return a.(*array.Int32).Value(i) })
	case arrow.INT64:
		vals = collect(recs, col, n, func(a arrow.Array, i int) int64 { return a.(*array.Int64).Value(i) })
	case arrow.UINT8:
		vals = collect(recs, col, n, func(a arrow.Array, i int) uint8 { return a.(*array.Uint8).Value(i) })
	case arrow.UINT16:
		vals = collect(recs, col, n, func(a arrow.Array, i int) uint16 { return a.(*array.Uint16).Value(i) })
	case arrow.UINT32:
		vals = collect(recs, col, n, func(a arrow.Array, i int) uint32 { return a.(*array.Uint32).Value(i) })
	case arrow.UINT64:
		vals = collect(recs, col, n, func(a arrow.Array, i int) uint64 { return a.(*array.Uint64).Value(i) })
	case arrow.FLOAT32:
		vals = collect(recs, col, n, func(a arrow.Array, i int) float32 { return a.(*array.Float32).Value(i) })
	case arrow.FLOAT64:
		vals = collect(recs, col, n, func(a arrow.Array, i int) float64 { return a.(*array.Float64).Value(i) })
	case arrow.DECIMAL128:
		scale := typ.(*arrow.Decimal128Type).Scale
		vals = collect(recs, col, n, func(a arrow.Array, i int) float64 {
			return a.(*array.Decimal128).Value(i).ToFloat64(scale)
		})
	case arrow.DECIMAL256:
		scale := typ.(*arrow.Decimal256Type).Scale
		vals = collect(recs, col, n, func(a arrow.Array, i int) float64 {
			return a.(*array.Decimal256).Value(i).ToFloat64(scale)
		})
	case arrow.TIMESTAMP:
		unit := typ.(*arrow.TimestampType).Unit
		vals = collect(recs, col, n, func(a arrow.Array, i int) time.Time {
			return unitTime(int64(a.(*array.Timestamp).Value(i)), unit)
		})
	case arrow.DATE32:
		vals = collect(recs, col, n, func(a arrow.Array, i int) time.Time {
			return a.(*array.Date32).Value(i).ToTime().UTC()
		})
	case arrow.DATE64:
		vals = collect(recs, col, n, func(a arrow.Array, i int) time.Time {
			return a.(*array.Date64).Value(i).ToTime().UTC()
		})
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		vals = collect(recs, col, n, func(a arrow.Array, i int) string {
			return strings.Clone(a.(array.StringLike).Value(i))
		})
	default:
		vals = collect(recs, col, n, jsonValue)
	}
	return data.NewField(f.Name, nil, vals), nil
}

// collect reads one column of every record into []*T; dictionary arrays
// are read through their dictionary.
func collect[T any](recs []arrow.RecordBatch, col, n int, get func(arrow.Array, int) T) []*T {
	out := make([]*T, 0, n)
	for _, r := range recs {
		a := r.Column(col)
		if d, ok := a.(*array.Dictionary); ok {
			dict, idx := d.Dictionary(), d
			for i := 0; i < d.Len(); i++ {
				if idx.IsNull(i) {
					out = append(out, nil)
					continue
				}
				v := get(dict, idx.GetValueIndex(i))
				out = append(out, &v)
			}
			continue
		}
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				out = append(out, nil)
				continue
			}
			v := get(a, i)
			out = append(out, &v)
		}
	}
	return out
}

// jsonValue writes any value as JSON text (lists, structs, maps, binary).
func jsonValue(a arrow.Array, i int) string {
	v := a.GetOneForMarshal(i)
	b, err := json.Marshal(v)
	if err != nil {
		return a.ValueStr(i)
	}
	return string(b)
}

func unitTime(v int64, unit arrow.TimeUnit) time.Time {
	switch unit {
	case arrow.Second:
		return time.Unix(v, 0).UTC()
	case arrow.Millisecond:
		return time.UnixMilli(v).UTC()
	case arrow.Microsecond:
		return time.UnixMicro(v).UTC()
	}
	return time.Unix(0, v).UTC()
}

// labelInts are integer columns that identify a series rather than
// measure something: in time series they become labels.
var labelInts = map[string]bool{"rank": true, "device": true, "gpu": true, "step": true}

// ToTimeSeries turns a table frame into time series. The time is the
// first time column, or else a BIGINT column named "time" read as ns since
// the epoch. Rows are sorted by time; string columns (and integer rank,
// device, gpu, step columns) become labels, one series per label set and
// numeric column.
func ToTimeSeries(frame *data.Frame) (*data.Frame, error) {
	ti := timeIndex(frame)
	if ti < 0 {
		return nil, fmt.Errorf("time series format needs a time column: a TIMESTAMP, or a BIGINT ns column named time (e.g. $__timeGroup(ts, $__interval) AS time); found %s", fieldList(frame))
	}
	if t := frame.Fields[ti].Type(); t != data.FieldTypeNullableTime && t != data.FieldTypeTime {
		frame.Fields[ti] = nsToTime(frame.Fields[ti])
	}
	for i, f := range frame.Fields {
		if i != ti && labelInts[strings.ToLower(f.Name)] && f.Type().Numeric() {
			frame.Fields[i] = numberToString(f)
		}
	}
	// Rows without a time cannot be plotted.
	rows, err := frame.RowLen()
	if err != nil {
		return nil, err
	}
	perm := make([]int, 0, rows)
	for i := 0; i < rows; i++ {
		if _, ok := frame.Fields[ti].ConcreteAt(i); ok {
			perm = append(perm, i)
		}
	}
	sortByTime(perm, frame.Fields[ti])
	frame = reorder(frame, perm)
	frame.Fields[ti] = nonNullTime(frame.Fields[ti])
	if frame.TimeSeriesSchema().Type == data.TimeSeriesTypeLong && len(perm) > 0 {
		wide, err := data.LongToWide(frame, nil)
		if err != nil {
			return nil, err
		}
		return wide, nil
	}
	return frame, nil
}

func timeIndex(frame *data.Frame) int {
	for i, f := range frame.Fields {
		if t := f.Type(); t == data.FieldTypeNullableTime || t == data.FieldTypeTime {
			return i
		}
	}
	for i, f := range frame.Fields {
		if strings.EqualFold(f.Name, "time") && f.Type().Numeric() {
			return i
		}
	}
	return -1
}

func fieldList(frame *data.Frame) string {
	var parts []string
	for _, f := range frame.Fields {
		parts = append(parts, f.Name+" "+f.Type().ItemTypeString())
	}
	if len(parts) == 0 {
		return "no columns"
	}
	return "columns " + strings.Join(parts, ", ")
}

func nsToTime(f *data.Field) *data.Field {
	out := data.NewFieldFromFieldType(data.FieldTypeNullableTime, f.Len())
	out.Name, out.Labels, out.Config = f.Name, f.Labels, f.Config
	for i := 0; i < f.Len(); i++ {
		v, ok := f.ConcreteAt(i)
		if !ok {
			continue
		}
		var ns int64
		switch x := v.(type) {
		case int64:
			ns = x
		case int32:
			ns = int64(x)
		case uint64:
			ns = int64(x)
		case float64:
			ns = int64(x)
		default:
			continue // narrower integers cannot hold ns since the epoch
		}
		t := time.Unix(0, ns).UTC()
		out.Set(i, &t)
	}
	return out
}

func numberToString(f *data.Field) *data.Field {
	out := data.NewFieldFromFieldType(data.FieldTypeNullableString, f.Len())
	out.Name = f.Name
	for i := 0; i < f.Len(); i++ {
		if v, ok := f.ConcreteAt(i); ok {
			s := fmt.Sprint(v)
			out.Set(i, &s)
		}
	}
	return out
}

func sortByTime(perm []int, tf *data.Field) {
	at := func(i int) int64 {
		v, _ := tf.ConcreteAt(i)
		return v.(time.Time).UnixNano()
	}
	sorted := true
	for k := 1; k < len(perm); k++ {
		if at(perm[k-1]) > at(perm[k]) {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	keys := make(map[int]int64, len(perm))
	for _, i := range perm {
		keys[i] = at(i)
	}
	sort.SliceStable(perm, func(a, b int) bool { return keys[perm[a]] < keys[perm[b]] })
}

func reorder(frame *data.Frame, perm []int) *data.Frame {
	out := data.NewFrame(frame.Name)
	out.Meta = frame.Meta
	for _, f := range frame.Fields {
		nf := data.NewFieldFromFieldType(f.Type(), len(perm))
		nf.Name, nf.Labels, nf.Config = f.Name, f.Labels, f.Config
		for j, i := range perm {
			nf.Set(j, f.At(i))
		}
		out.Fields = append(out.Fields, nf)
	}
	return out
}

// nonNullTime: LongToWide and Grafana's alerting want []time.Time; the
// rows without a time are gone by now.
func nonNullTime(f *data.Field) *data.Field {
	if f.Type() == data.FieldTypeTime {
		return f
	}
	out := data.NewFieldFromFieldType(data.FieldTypeTime, f.Len())
	out.Name, out.Labels, out.Config = f.Name, f.Labels, f.Config
	for i := 0; i < f.Len(); i++ {
		v, _ := f.ConcreteAt(i)
		out.Set(i, v.(time.Time))
	}
	return out
}
