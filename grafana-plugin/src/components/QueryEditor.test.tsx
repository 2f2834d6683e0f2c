import React, { useState } from 'react';
import { beforeEach, describe, expect, it, jest } from '@jest/globals';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { QueryEditor } from './QueryEditor';
import { Call, fakeBackend, fakeTemplateSrv, newDataSource } from '../test/fakes';
import { DEFAULT_SQL, TrainscopeQuery } from '../types';

// What pkg/macros expands (callRE and bareRE in macros.go).
const BACKEND_MACROS = [
  '$__timeFilter(',
  '$__timeFrom',
  '$__timeTo',
  '$__timeGroup(',
  '$__interval',
  '$__interval_ns',
  '$__interval_ms',
  '$__run',
  '$__ranks',
];

const RANKS: Record<string, string[]> = { r1: ['0 (node-a)', '1 (node-a)'], r2: ['0 (node-b)', '1 (node-b)', '2 (node-c)'] };

let calls: Call[];

beforeEach(() => {
  fakeTemplateSrv({ run: 'r1' });
  calls = fakeBackend({
    runs: [
      { text: 'r1 (llama, 2 ranks)', value: 'r1' },
      { text: 'r2 (gpt, 3 ranks)', value: 'r2' },
    ],
    // Like the backend, only the ranks of ?run=, all of them without it.
    ranks: ({ run }) =>
      (run ? run.split(',') : Object.keys(RANKS)).flatMap((r) => (RANKS[r] ?? []).map((text) => ({ text, value: text.split(' ')[0] }))),
    detectors: [
      { text: 'straggler_rank', value: 'straggler_rank' },
      { text: 'mfu', value: 'mfu' },
    ],
    categories: [{ text: 'communication', value: 'communication' }],
    severities: [{ text: 'critical', value: 'critical' }],
  });
});

/** Renders the editor the way Grafana does: each onChange becomes the next query. */
async function renderEditor(initial: TrainscopeQuery) {
  const onChange = jest.fn<(q: TrainscopeQuery) => void>();
  const onRunQuery = jest.fn<() => void>();
  const datasource = newDataSource();
  function Host() {
    const [query, setQuery] = useState(initial);
    return (
      <QueryEditor
        query={query}
        datasource={datasource}
        onChange={(q) => {
          onChange(q);
          setQuery(q);
        }}
        onRunQuery={onRunQuery}
      />
    );
  }
  // act waits for the editor's resource requests to answer.
  await act(async () => {
    render(<Host />);
  });
  const last = () => onChange.mock.calls[onChange.mock.calls.length - 1]?.[0];
  return { onChange, onRunQuery, last, user: userEvent.setup({ delay: null }) };
}

/** The options a picker offers once opened, as the user reads them. */
async function openPicker(user: ReturnType<typeof userEvent.setup>, name: string): Promise<string[]> {
  await user.click(screen.getByRole('combobox', { name }));
  return screen.getAllByRole('option').map((o) => o.textContent ?? '');
}

const resourceCalls = (name: string) => calls.filter((c) => c.url.endsWith(`/resources/${name}`));

describe('QueryEditor mode', () => {
  it('a new query is a findings query with the findings filters and no SQL editor', async () => {
    await renderEditor({ refId: 'A' });
    expect(screen.getByRole('radio', { name: 'Findings' })).toBeChecked();
    for (const name of ['Detector', 'Category', 'Severity']) {
      expect(screen.getByRole('combobox', { name })).toBeInTheDocument();
    }
    expect(screen.queryByRole('textbox', { name: 'SQL' })).not.toBeInTheDocument();
    expect(screen.queryByRole('radio', { name: 'Time series' })).not.toBeInTheDocument();
  });

  it('switching to SQL fills in the example SQL, runs the query, and shows the SQL editor and format instead of the filters', async () => {
    const { last, onRunQuery, user } = await renderEditor({ refId: 'A', queryType: 'findings' });
    await user.click(screen.getByRole('radio', { name: 'SQL' }));

    expect(last()).toEqual({ refId: 'A', queryType: 'sql', rawSql: DEFAULT_SQL });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    expect(screen.getByRole('textbox', { name: 'SQL' })).toHaveValue(DEFAULT_SQL);
    expect(screen.getByRole('radio', { name: 'Table' })).toBeChecked();
    for (const name of ['Detector', 'Category', 'Severity']) {
      expect(screen.queryByRole('combobox', { name })).not.toBeInTheDocument();
    }
    // Run and ranks stay: they are what $__run and $__ranks expand to.
    expect(screen.getByRole('combobox', { name: 'Run' })).toBeInTheDocument();
    expect(screen.getByRole('combobox', { name: 'Ranks' })).toBeInTheDocument();
  });

  it('switching modes back and forth keeps the SQL the user wrote', async () => {
    const { last, user } = await renderEditor({ refId: 'A', queryType: 'sql', rawSql: 'SELECT 1' });
    await user.click(screen.getByRole('radio', { name: 'Findings' }));
    expect(last()).toEqual({ refId: 'A', queryType: 'findings', rawSql: 'SELECT 1' });
    expect(screen.getByRole('combobox', { name: 'Detector' })).toBeInTheDocument();

    await user.click(screen.getByRole('radio', { name: 'SQL' }));
    expect(last()).toEqual({ refId: 'A', queryType: 'sql', rawSql: 'SELECT 1' });
    expect(screen.getByRole('textbox', { name: 'SQL' })).toHaveValue('SELECT 1');
  });

  it('SQL edits change the query as typed and run it on blur; the format runs it at once', async () => {
    const { last, onRunQuery, user } = await renderEditor({ refId: 'A', queryType: 'sql', rawSql: '' });
    await user.type(screen.getByRole('textbox', { name: 'SQL' }), 'SELECT 2');
    expect(last()).toMatchObject({ queryType: 'sql', rawSql: 'SELECT 2' });
    expect(onRunQuery).not.toHaveBeenCalled();
    await user.tab();
    expect(onRunQuery).toHaveBeenCalledTimes(1);

    await user.click(screen.getByRole('radio', { name: 'Time series' }));
    expect(last()).toMatchObject({ rawSql: 'SELECT 2', format: 'time_series' });
    expect(onRunQuery).toHaveBeenCalledTimes(2);
  });

  it('the row limit is a number, and clearing it leaves the data source default', async () => {
    const { last, user } = await renderEditor({ refId: 'A', rowLimit: 50 });
    const limit = screen.getByRole('spinbutton', { name: 'Row limit' });
    await user.clear(limit);
    expect(last()?.rowLimit).toBeUndefined();
    await user.type(limit, '500');
    expect(last()?.rowLimit).toBe(500);
  });
});

describe('QueryEditor macros help', () => {
  it('lists every macro the backend expands', async () => {
    const { user } = await renderEditor({ refId: 'A', queryType: 'sql', rawSql: 'SELECT 1' });
    const sql = screen.getByRole('textbox', { name: 'SQL' });
    const label = document.querySelector<HTMLElement>(`label[for="${sql.id}"]`)!;
    await user.hover(within(label).getByTestId('icon-info-circle'));
    const help = (await screen.findByRole('tooltip')).textContent ?? '';
    for (const macro of BACKEND_MACROS) {
      expect(help).toContain(macro);
    }
  });
});

describe('QueryEditor run and rank pickers', () => {
  it('the run picker offers the backend runs after the dashboard variables, and picking one sets the run and runs the query', async () => {
    const { last, onRunQuery, user } = await renderEditor({ refId: 'A', queryType: 'findings' });
    expect(resourceCalls('runs')).toEqual([{ method: 'GET', url: '/api/datasources/uid/ts-uid/resources/runs', params: {} }]);

    expect(await openPicker(user, 'Run')).toEqual(['$run', 'r1 (llama, 2 ranks)', 'r2 (gpt, 3 ranks)']);
    await user.click(screen.getByRole('option', { name: 'r2 (gpt, 3 ranks)' }));
    expect(last()).toEqual({ refId: 'A', queryType: 'findings', run: 'r2' });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });

  it("the rank picker offers the chosen run's ranks, and a pick is added to the ranks", async () => {
    const { last, user } = await renderEditor({ refId: 'A', run: 'r1', ranks: '1' });
    expect(resourceCalls('ranks').map((c) => c.params)).toEqual([{ run: 'r1' }]);

    const offered = await openPicker(user, 'Ranks');
    expect(offered).toEqual(expect.arrayContaining(['$run', '0 (node-a)']));
    expect(offered).not.toContain('0 (node-b)');
    await user.click(screen.getByRole('option', { name: '0 (node-a)' }));
    expect(last()).toMatchObject({ run: 'r1', ranks: '1,0' });
  });

  it('picking another run reloads the ranks, detectors, categories and severities for it', async () => {
    const { user } = await renderEditor({ refId: 'A', run: 'r1' });
    await openPicker(user, 'Run');
    // fireEvent inside act, not user.click: act then waits for the reloads to answer.
    await act(async () => {
      fireEvent.click(screen.getByRole('option', { name: 'r2 (gpt, 3 ranks)' }));
    });
    for (const name of ['ranks', 'detectors', 'categories', 'severities']) {
      expect(resourceCalls(name).map((c) => c.params?.run)).toEqual(['r1', 'r2']);
    }
    expect(await openPicker(user, 'Ranks')).toEqual(['$run', '0 (node-b)', '1 (node-b)', '2 (node-c)']);
  });

  it('a run that is a dashboard variable asks the backend for its value', async () => {
    await renderEditor({ refId: 'A', run: '$run' });
    expect(resourceCalls('ranks').map((c) => c.params)).toEqual([{ run: 'r1' }]);
  });

  it('the detector picker offers the backend detectors and keeps picks as a comma-separated list', async () => {
    const { last, user } = await renderEditor({ refId: 'A', queryType: 'findings', detector: 'mfu' });
    expect(await openPicker(user, 'Detector')).toEqual(['$run', 'straggler_rank']);
    await user.click(screen.getByRole('option', { name: 'straggler_rank' }));
    expect(last()).toMatchObject({ detector: 'mfu,straggler_rank' });
  });
});
