// Test doubles for the Grafana services the frontend calls: the backend
// (what getResource reaches) and the dashboard's template variables.
import { DataSourceInstanceSettings, PluginType, ScopedVars, TypedVariableModel } from '@grafana/data';
import { BackendSrv, BackendSrvRequest, FetchResponse, TemplateSrv, setBackendSrv, setTemplateSrv } from '@grafana/runtime';
import { of } from 'rxjs';

import { DataSource } from '../datasource';
import { Option, TrainscopeOptions } from '../types';

export const UID = 'ts-uid';

/** One request the fake backend answered. */
export interface Call {
  method?: string;
  url: string;
  params?: Record<string, string>;
}

/**
 * Answers GET /api/datasources/uid/<uid>/resources/<name> from `resources`
 * (what pkg/plugin/resources.go would return) and records every request.
 * A resource function sees the query parameters, like the backend's filters.
 */
export function fakeBackend(resources: Record<string, Option[] | ((params: Record<string, string>) => Option[])>): Call[] {
  const calls: Call[] = [];
  const prefix = `/api/datasources/uid/${UID}/resources/`;
  const srv: Partial<BackendSrv> = {
    fetch<T>(req: BackendSrvRequest) {
      const params = { ...(req.params as Record<string, string> | undefined) };
      calls.push({ method: req.method, url: req.url, params });
      if (!req.url.startsWith(prefix)) {
        throw new Error(`unexpected request ${req.url}`);
      }
      const res = resources[req.url.slice(prefix.length)];
      const data = typeof res === 'function' ? res(params) : (res ?? null);
      return of({ data, status: 200, ok: true, url: req.url } as FetchResponse<T>);
    },
  };
  setBackendSrv(srv as BackendSrv);
  return calls;
}

/**
 * Dashboard variables for getTemplateSrv(): `$name` and `${name}` expand to
 * the variable's value (a scoped variable wins), multi-values joined by ','
 * for the 'csv' format and as {a,b} otherwise, as Grafana does; unknown
 * names are left alone.
 */
export function fakeTemplateSrv(vars: Record<string, string | string[]> = {}) {
  const srv: TemplateSrv = {
    getVariables: () => Object.keys(vars).map((name) => ({ name }) as TypedVariableModel),
    replace(target?: string, scoped?: ScopedVars, format?: string | Function) {
      return (target ?? '').replace(/\$(\w+)|\$\{(\w+)\}/g, (m, a?: string, b?: string) => {
        const name = (a ?? b)!;
        const v = scoped?.[name]?.value ?? vars[name];
        if (v === undefined) {
          return m;
        }
        if (Array.isArray(v)) {
          return format === 'csv' ? v.join(',') : `{${v.join(',')}}`;
        }
        return String(v);
      });
    },
    containsTemplate: (target?: string) => /\$\w/.test(target ?? ''),
    updateTimeRange: () => {},
  };
  setTemplateSrv(srv);
  return srv;
}

export function newDataSource(): DataSource {
  const settings: DataSourceInstanceSettings<TrainscopeOptions> = {
    uid: UID,
    type: 'trainscope-trainscope-datasource',
    name: 'trainscope',
    access: 'proxy',
    readOnly: false,
    jsonData: {},
    meta: {
      id: 'trainscope-trainscope-datasource',
      name: 'trainscope',
      type: PluginType.datasource,
      module: '',
      baseUrl: '',
      info: {
        author: { name: 'trainscope' },
        description: '',
        links: [],
        logos: { small: '', large: '' },
        screenshots: [],
        updated: '',
        version: '',
      },
    },
  };
  return new DataSource(settings);
}
