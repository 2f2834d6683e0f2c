import React, { ChangeEvent, useEffect, useState } from 'react';
import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { getTemplateSrv } from '@grafana/runtime';
import { InlineField, InlineFieldRow, Input, MultiSelect, RadioButtonGroup, Select, TextArea } from '@grafana/ui';

import { DataSource } from '../datasource';
import { DEFAULT_SQL, Format, Option, QueryType, Resource, TrainscopeOptions, TrainscopeQuery } from '../types';

type Props = QueryEditorProps<DataSource, TrainscopeQuery, TrainscopeOptions>;

const QUERY_TYPES: Array<SelectableValue<QueryType>> = [
  { label: 'Findings', value: 'findings', description: 'Filter the findings table' },
  { label: 'SQL', value: 'sql', description: 'Raw DuckDB SQL with macros' },
];
const FORMATS: Array<SelectableValue<Format>> = [
  { label: 'Table', value: 'table' },
  { label: 'Time series', value: 'time_series' },
];

const MACRO_HELP =
  '$__timeFilter(col) · $__timeFrom() · $__timeTo() · $__timeGroup(col, $__interval) · $__interval · $__interval_ns · $__interval_ms · $__run · $__ranks ' +
  '(times are BIGINT ns since the epoch; time series need a column named time or a TIMESTAMP)';

/** Options of one resource, reloaded when the run changes. Variables ($run) are offered too. */
function useOptions(ds: DataSource, resource: Resource, run?: string): Array<SelectableValue<string>> {
  const [opts, setOpts] = useState<Array<SelectableValue<string>>>([]);
  useEffect(() => {
    let live = true;
    ds.options(resource, { run })
      .then((list: Option[]) => {
        if (live) {
          const vars = getTemplateSrv()
            .getVariables()
            .map((v) => ({ label: '$' + v.name, value: '$' + v.name }));
          setOpts([...vars, ...list.map((o) => ({ label: o.text, value: o.value }))]);
        }
      })
      .catch(() => live && setOpts([]));
    return () => {
      live = false;
    };
  }, [ds, resource, run]);
  return opts;
}

const csv = (v?: string) => (v ? v.split(',').filter((s) => s !== '') : []);
const fromMulti = (vals: Array<SelectableValue<string>>) => vals.map((v) => v.value ?? '').filter((s) => s !== '').join(',');

export function QueryEditor({ query, onChange, onRunQuery, datasource }: Props) {
  const queryType = query.queryType ?? 'findings';
  const runs = useOptions(datasource, 'runs');
  const ranks = useOptions(datasource, 'ranks', query.run);
  const detectors = useOptions(datasource, 'detectors', query.run);
  const categories = useOptions(datasource, 'categories', query.run);
  const severities = useOptions(datasource, 'severities', query.run);

  const set = (patch: Partial<TrainscopeQuery>, run = true) => {
    onChange({ ...query, ...patch });
    if (run) {
      onRunQuery();
    }
  };

  return (
    <>
      <InlineFieldRow>
        <InlineField label="Query" labelWidth={10}>
          <RadioButtonGroup
            options={QUERY_TYPES}
            value={queryType}
            onChange={(v: QueryType) => set({ queryType: v, rawSql: v === 'sql' && !query.rawSql ? DEFAULT_SQL : query.rawSql })}
          />
        </InlineField>
        {queryType === 'sql' && (
          <InlineField label="Format" labelWidth={10}>
            <RadioButtonGroup options={FORMATS} value={query.format ?? 'table'} onChange={(v: Format) => set({ format: v })} />
          </InlineField>
        )}
        <InlineField label="Row limit" labelWidth={10} tooltip="Overrides the data source's row limit">
          <Input
            width={12}
            type="number"
            value={query.rowLimit ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) => set({ rowLimit: parseInt(e.currentTarget.value, 10) || undefined }, false)}
            onBlur={onRunQuery}
          />
        </InlineField>
      </InlineFieldRow>
      <InlineFieldRow>
        <InlineField label="Run" labelWidth={10} tooltip="Findings of this run; also what $__run expands to">
          <Select
            width={30}
            isClearable
            allowCustomValue
            options={runs}
            value={query.run ?? null}
            onChange={(v: SelectableValue<string> | null) => set({ run: v?.value })}
          />
        </InlineField>
        <InlineField label="Ranks" labelWidth={10} tooltip="Empty means all; also what $__ranks expands to">
          <MultiSelect
            width={30}
            allowCustomValue
            options={ranks}
            value={csv(query.ranks)}
            onChange={(v: Array<SelectableValue<string>>) => set({ ranks: fromMulti(v) })}
          />
        </InlineField>
      </InlineFieldRow>
      {queryType === 'findings' ? (
        <InlineFieldRow>
          <InlineField label="Detector" labelWidth={10}>
            <MultiSelect width={30} allowCustomValue options={detectors} value={csv(query.detector)} onChange={(v: Array<SelectableValue<string>>) => set({ detector: fromMulti(v) })} />
          </InlineField>
          <InlineField label="Category" labelWidth={10}>
            <MultiSelect width={25} allowCustomValue options={categories} value={csv(query.category)} onChange={(v: Array<SelectableValue<string>>) => set({ category: fromMulti(v) })} />
          </InlineField>
          <InlineField label="Severity" labelWidth={10}>
            <MultiSelect width={25} allowCustomValue options={severities} value={csv(query.severity)} onChange={(v: Array<SelectableValue<string>>) => set({ severity: fromMulti(v) })} />
          </InlineField>
        </InlineFieldRow>
      ) : (
        <InlineField label="SQL" labelWidth={10} grow tooltip={MACRO_HELP}>
          <TextArea
            rows={8}
            value={query.rawSql ?? ''}
            placeholder={DEFAULT_SQL}
            onChange={(e: ChangeEvent<HTMLTextAreaElement>) => set({ rawSql: e.currentTarget.value }, false)}
            onBlur={onRunQuery}
          />
        </InlineField>
      )}
    </>
  );
}
