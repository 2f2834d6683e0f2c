package plugin

import (
	"context"
	"fmt"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
)

// The calls Grafana makes, checked at compile time.
var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ backend.CallResourceHandler   = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// maxParallelQueries bounds the queries of one request that run at once.
const maxParallelQueries = 4

// Datasource is one configured data source: its settings and connection.
// datasource.Manage makes one per data source and settings version and
// disposes of the old one when the settings change.
type Datasource struct {
	settings Settings
	client   *Client
	err      error // bad settings: every call answers with it
}

// instance is the Datasource as the handlers use it.
type instance = Datasource

// NewDatasource is the factory datasource.Manage calls per instance. Bad
// settings do not fail it: every call then says what is wrong.
func NewDatasource(_ context.Context, raw backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	s, err := LoadSettings(raw)
	if err != nil {
		return &Datasource{settings: s, err: fmt.Errorf("settings: %w", err)}, nil
	}
	c, err := NewClient(s)
	if err != nil {
		return &Datasource{settings: s, err: fmt.Errorf("settings: %w", err)}, nil
	}
	return &Datasource{settings: s, client: c}, nil
}

// Dispose closes the connection when Grafana replaces the settings.
func (d *Datasource) Dispose() {
	if d.client != nil {
		d.client.Close()
	}
}

func (d *Datasource) instance(context.Context, backend.PluginContext) (*instance, error) {
	if d.err != nil {
		return nil, d.err
	}
	return d, nil
}

// QueryData answers each query on its own: one failing query does not
// fail the others. Queries run in parallel, a few at a time; a cancelled
// request cancels their streams.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	inst, err := d.instance(ctx, req.PluginContext)
	if err != nil {
		for _, q := range req.Queries {
			resp.Responses[q.RefID] = backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
		}
		return resp, nil
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, maxParallelQueries)
	)
	for _, q := range req.Queries {
		wg.Add(1)
		go func(q backend.DataQuery) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := d.runQuery(ctx, inst, q)
			mu.Lock()
			resp.Responses[q.RefID] = r
			mu.Unlock()
		}(q)
	}
	wg.Wait()
	return resp, nil
}
