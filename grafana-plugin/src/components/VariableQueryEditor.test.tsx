import React, { useState } from 'react';
import { describe, expect, it, jest } from '@jest/globals';
import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { VariableQueryEditor } from './VariableQueryEditor';
import { newDataSource } from '../test/fakes';
import { RESOURCES, VariableQuery } from '../types';

function renderEditor(initial: VariableQuery) {
  const onChange = jest.fn<(q: VariableQuery) => void>();
  const datasource = newDataSource();
  function Host() {
    const [query, setQuery] = useState(initial);
    return (
      <VariableQueryEditor
        query={query}
        datasource={datasource}
        onChange={(q) => {
          onChange(q);
          setQuery(q);
        }}
        onRunQuery={() => {}}
      />
    );
  }
  render(<Host />);
  const last = () => onChange.mock.calls[onChange.mock.calls.length - 1][0];
  return { onChange, last, user: userEvent.setup({ delay: null }) };
}

describe('VariableQueryEditor', () => {
  it('a new variable lists runs, and the list offers every backend resource', async () => {
    const { onChange, last, user } = renderEditor({ refId: 'V' });
    expect(screen.getByText('runs')).toBeInTheDocument();
    expect(onChange).not.toHaveBeenCalled();

    await user.click(screen.getByRole('combobox', { name: 'List' }));
    expect(screen.getAllByRole('option').map((o) => o.textContent)).toEqual(RESOURCES);
    await user.click(screen.getByRole('option', { name: 'hosts' }));
    expect(last()).toEqual({ refId: 'V', resource: 'hosts' });
  });

  it('the run and detector filters go into the query, with the resource filled in', async () => {
    const { last, user } = renderEditor({ refId: 'V' });
    await user.type(screen.getByRole('textbox', { name: 'Run' }), '$run');
    expect(last()).toEqual({ refId: 'V', resource: 'runs', run: '$run' });
    await user.type(screen.getByRole('textbox', { name: 'Detector' }), 'mfu');
    expect(last()).toEqual({ refId: 'V', resource: 'runs', run: '$run', detector: 'mfu' });
  });

  it('a saved variable shows its resource and filters', () => {
    renderEditor({ refId: 'V', resource: 'metrics', run: 'r1', detector: 'mfu' });
    expect(screen.getByText('metrics')).toBeInTheDocument();
    expect(screen.getByRole('textbox', { name: 'Run' })).toHaveValue('r1');
    expect(screen.getByRole('textbox', { name: 'Detector' })).toHaveValue('mfu');
  });
});
