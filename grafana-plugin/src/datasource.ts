import {
  CustomVariableSupport,
  DataQueryRequest,
  DataQueryResponse,
  DataSourceInstanceSettings,
  MetricFindValue,
  ScopedVars,
} from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';
import { Observable, from, map } from 'rxjs';

import { VariableQueryEditor } from './components/VariableQueryEditor';
import { Option, Resource, TrainscopeOptions, TrainscopeQuery, VariableQuery, DEFAULT_QUERY } from './types';

/** Grafana's built-in interval variables are left to the backend's macros, which alerting needs too. */
const BACKEND_MACROS = ['__interval', '__interval_ms'];

export class DataSource extends DataSourceWithBackend<TrainscopeQuery, TrainscopeOptions> {
  constructor(instanceSettings: DataSourceInstanceSettings<TrainscopeOptions>) {
    super(instanceSettings);
    this.variables = new TrainscopeVariableSupport(this);
    // Annotations are SQL queries like any other: a row's time (and
    // timeEnd), text and tags columns make an annotation, e.g. the run
    // dashboard's GPU hardware findings.
    this.annotations = {};
  }

  getDefaultQuery(): Partial<TrainscopeQuery> {
    return DEFAULT_QUERY;
  }

  filterQuery(query: TrainscopeQuery): boolean {
    if (query.hide) {
      return false;
    }
    return query.queryType === 'findings' || !!query.rawSql?.trim();
  }

  applyTemplateVariables(query: TrainscopeQuery, scopedVars: ScopedVars): TrainscopeQuery {
    const vars: ScopedVars = { ...scopedVars };
    for (const name of BACKEND_MACROS) {
      delete vars[name];
    }
    const srv = getTemplateSrv();
    const csv = (v?: string) => (v ? srv.replace(v, vars, 'csv') : v);
    return {
      ...query,
      rawSql: query.rawSql ? srv.replace(query.rawSql, vars) : query.rawSql,
      run: csv(query.run),
      ranks: csv(query.ranks),
      detector: csv(query.detector),
      category: csv(query.category),
      severity: csv(query.severity),
    };
  }

  /** Options of a backend resource (runs, hosts, ranks, ...), for editors and variables. */
  async options(resource: Resource, params: { run?: string; detector?: string } = {}): Promise<Option[]> {
    const srv = getTemplateSrv();
    const q: Record<string, string> = {};
    if (params.run) {
      q.run = srv.replace(params.run, undefined, 'csv');
    }
    if (params.detector) {
      q.detector = srv.replace(params.detector, undefined, 'csv');
    }
    const out = await this.getResource<Option[]>(resource, q);
    return out ?? [];
  }
}

/** Template variables list a resource: runs, hosts, ranks, detectors, ... */
export class TrainscopeVariableSupport extends CustomVariableSupport<DataSource, VariableQuery> {
  editor = VariableQueryEditor;

  constructor(private readonly ds: DataSource) {
    super();
  }

  query(request: DataQueryRequest<VariableQuery>): Observable<DataQueryResponse> {
    const q = request.targets[0] ?? { resource: 'runs' as Resource };
    return from(this.ds.options(q.resource ?? 'runs', { run: q.run, detector: q.detector })).pipe(
      map((opts): DataQueryResponse => ({
        data: opts.map((o): MetricFindValue => ({ text: o.text, value: o.value })),
      }))
    );
  }
}
