import { beforeEach, describe, expect, it } from '@jest/globals';
import { CoreApp, DataQueryRequest, ScopedVars, dateTime } from '@grafana/data';
import { lastValueFrom } from 'rxjs';

import { VariableQueryEditor } from './components/VariableQueryEditor';
import { TrainscopeVariableSupport } from './datasource';
import { Call, fakeBackend, fakeTemplateSrv, newDataSource } from './test/fakes';
import { TrainscopeQuery, VariableQuery } from './types';

let calls: Call[];

beforeEach(() => {
  fakeTemplateSrv({ run: ['r1', 'r2'], rank: ['0', '3'], host: 'node-a', det: 'mfu' });
  calls = fakeBackend({
    runs: [{ text: 'r1 (llama)', value: 'r1' }],
    hosts: [
      { text: 'node-a', value: 'node-a' },
      { text: 'node-b', value: 'node-b' },
    ],
  });
});

describe('filterQuery', () => {
  const ds = newDataSource();
  it.each<[string, TrainscopeQuery, boolean]>([
    ['findings query', { refId: 'A', queryType: 'findings' }, true],
    ['SQL query', { refId: 'A', queryType: 'sql', rawSql: 'SELECT 1' }, true],
    ['SQL query without SQL', { refId: 'A', queryType: 'sql', rawSql: '  \n' }, false],
    ['SQL query never typed', { refId: 'A', queryType: 'sql' }, false],
    ['hidden findings query', { refId: 'A', queryType: 'findings', hide: true }, false],
    ['hidden SQL query', { refId: 'A', queryType: 'sql', rawSql: 'SELECT 1', hide: true }, false],
  ])('%s', (_name, query, want) => {
    expect(ds.filterQuery(query)).toBe(want);
  });
});

describe('applyTemplateVariables', () => {
  const ds = newDataSource();
  const scoped: ScopedVars = {
    __interval: { text: '10s', value: '10s' },
    __interval_ms: { text: '10000', value: 10000 },
    metric: { text: 'sm_util', value: 'sm_util' },
  };

  it('replaces dashboard and scoped variables in the SQL, and leaves the interval macros to the backend', () => {
    const q = ds.applyTemplateVariables(
      { refId: 'A', queryType: 'sql', rawSql: "SELECT $__interval, $__interval_ms FROM counters WHERE host = '$host' AND metric = '${metric}'" },
      scoped
    );
    expect(q.rawSql).toBe("SELECT $__interval, $__interval_ms FROM counters WHERE host = 'node-a' AND metric = 'sm_util'");
  });

  it('expands multi-value variables in the builder fields as comma-separated lists', () => {
    const q = ds.applyTemplateVariables(
      { refId: 'A', queryType: 'findings', run: '$run', ranks: '$rank', detector: '$det', category: 'memory', severity: 'warn,critical' },
      scoped
    );
    expect(q).toEqual({
      refId: 'A',
      queryType: 'findings',
      rawSql: undefined,
      run: 'r1,r2',
      ranks: '0,3',
      detector: 'mfu',
      category: 'memory',
      severity: 'warn,critical',
    });
  });

  it('does not change the scoped variables it was given', () => {
    ds.applyTemplateVariables({ refId: 'A', rawSql: 'SELECT 1' }, scoped);
    expect(Object.keys(scoped)).toEqual(['__interval', '__interval_ms', 'metric']);
  });
});

describe('options', () => {
  const ds = newDataSource();

  it('reads a resource with the run and detector filters, variables expanded', async () => {
    const opts = await ds.options('hosts', { run: '$run', detector: '$det' });
    expect(opts).toEqual([
      { text: 'node-a', value: 'node-a' },
      { text: 'node-b', value: 'node-b' },
    ]);
    expect(calls).toEqual([{ method: 'GET', url: '/api/datasources/uid/ts-uid/resources/hosts', params: { run: 'r1,r2', detector: 'mfu' } }]);
  });

  it('sends no filter it was not given, and an empty answer is an empty list', async () => {
    expect(await ds.options('severities')).toEqual([]);
    expect(calls).toEqual([{ method: 'GET', url: '/api/datasources/uid/ts-uid/resources/severities', params: {} }]);
  });
});

describe('template variables', () => {
  const request = (targets: VariableQuery[]) =>
    ({
      requestId: 'v',
      interval: '1m',
      intervalMs: 60000,
      range: { from: dateTime(0), to: dateTime(1), raw: { from: 'now-1h', to: 'now' } },
      scopedVars: {},
      targets,
      timezone: 'utc',
      app: CoreApp.Dashboard,
      startTime: 0,
    }) as DataQueryRequest<VariableQuery>;

  it('use the variable editor, and list the chosen resource for the chosen run', async () => {
    const variables = newDataSource().variables;
    expect(variables).toBeInstanceOf(TrainscopeVariableSupport);
    expect((variables as TrainscopeVariableSupport).editor).toBe(VariableQueryEditor);

    const res = await lastValueFrom((variables as TrainscopeVariableSupport).query(request([{ refId: 'V', resource: 'hosts', run: '$run' }])));
    expect(res.data).toEqual([
      { text: 'node-a', value: 'node-a' },
      { text: 'node-b', value: 'node-b' },
    ]);
    expect(calls.map((c) => [c.url, c.params])).toEqual([['/api/datasources/uid/ts-uid/resources/hosts', { run: 'r1,r2' }]]);
  });

  it('list runs when no resource is chosen', async () => {
    const variables = newDataSource().variables as TrainscopeVariableSupport;
    const res = await lastValueFrom(variables.query(request([{ refId: 'V' }])));
    expect(res.data).toEqual([{ text: 'r1 (llama)', value: 'r1' }]);
  });
});

it('a new query is a findings query shown as a table', () => {
  expect(newDataSource().getDefaultQuery()).toEqual({ queryType: 'findings', format: 'table' });
});
