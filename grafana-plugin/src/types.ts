import { DataSourceJsonData } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

export type QueryType = 'sql' | 'findings';
export type Format = 'table' | 'time_series';

/** The query model; pkg/plugin/query.go reads the same fields. */
export interface TrainscopeQuery extends DataQuery {
  queryType?: QueryType;
  rawSql?: string;
  format?: Format;
  rowLimit?: number;
  /** Scope of the findings builder, and what $__run / $__ranks expand to. */
  run?: string;
  ranks?: string;
  detector?: string;
  category?: string;
  severity?: string;
}

export const DEFAULT_SQL = `SELECT $__timeGroup(ts, $__interval) AS time, host, metric, avg(value) AS value
FROM counters
WHERE run_id = $__run AND $__timeFilter(ts)
GROUP BY ALL
ORDER BY time`;

export const DEFAULT_QUERY: Partial<TrainscopeQuery> = {
  queryType: 'findings',
  format: 'table',
};

/** jsonData; pkg/plugin/settings.go reads the same fields. */
export interface TrainscopeOptions extends DataSourceJsonData {
  address?: string;
  tls?: boolean;
  tlsSkipVerify?: boolean;
  tlsServerName?: string;
  timeoutSeconds?: number;
  rowLimit?: number;
}

/** secureJsonData: written once, never sent back to the browser. */
export interface TrainscopeSecureOptions {
  token?: string;
  tlsCACert?: string;
}

/** A template variable's query: one of the backend's resources. */
export interface VariableQuery extends DataQuery {
  resource?: Resource;
  run?: string;
  detector?: string;
}

export type Resource = 'runs' | 'hosts' | 'ranks' | 'detectors' | 'categories' | 'severities' | 'metrics';

export const RESOURCES: Resource[] = ['runs', 'hosts', 'ranks', 'detectors', 'categories', 'severities', 'metrics'];

export interface Option {
  text: string;
  value: string;
}
