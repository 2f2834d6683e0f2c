import React, { ChangeEvent } from 'react';
import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, Input, Select } from '@grafana/ui';

import type { DataSource } from '../datasource';
import { RESOURCES, Resource, TrainscopeOptions, TrainscopeQuery, VariableQuery } from '../types';

type Props = QueryEditorProps<DataSource, TrainscopeQuery, TrainscopeOptions, VariableQuery>;

const OPTIONS: Array<SelectableValue<Resource>> = RESOURCES.map((r) => ({ label: r, value: r }));

/** A variable lists one resource, optionally for a run ($run works) or a detector. */
export function VariableQueryEditor({ query, onChange }: Props) {
  const q: VariableQuery = { ...query, resource: query.resource ?? 'runs' };
  return (
    <InlineFieldRow>
      <InlineField label="List" labelWidth={10}>
        <Select width={20} options={OPTIONS} value={q.resource} onChange={(v: SelectableValue<Resource>) => onChange({ ...q, resource: v.value ?? 'runs' })} />
      </InlineField>
      <InlineField label="Run" labelWidth={10} tooltip="Only this run's values; a variable such as $run works">
        <Input width={20} value={q.run ?? ''} onChange={(e: ChangeEvent<HTMLInputElement>) => onChange({ ...q, run: e.currentTarget.value })} />
      </InlineField>
      <InlineField label="Detector" labelWidth={10} tooltip="For categories and metrics: only this detector's">
        <Input width={20} value={q.detector ?? ''} onChange={(e: ChangeEvent<HTMLInputElement>) => onChange({ ...q, detector: e.currentTarget.value })} />
      </InlineField>
    </InlineFieldRow>
  );
}
