import React, { useState } from 'react';
import { describe, expect, it, jest } from '@jest/globals';
import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { DataSourceSettings } from '@grafana/data';

import { ConfigEditor } from './ConfigEditor';
import { TrainscopeOptions, TrainscopeSecureOptions } from '../types';

type Settings = DataSourceSettings<TrainscopeOptions, TrainscopeSecureOptions>;

function settings(patch: Partial<Settings> = {}): Settings {
  return {
    id: 1,
    uid: 'ts-uid',
    orgId: 1,
    name: 'trainscope',
    typeLogoUrl: '',
    type: 'trainscope-trainscope-datasource',
    typeName: 'trainscope',
    access: 'proxy',
    url: '',
    user: '',
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- still a required field of DataSourceSettings
    database: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    jsonData: {},
    secureJsonFields: {},
    readOnly: false,
    withCredentials: false,
    ...patch,
  };
}

/** Renders the editor the way Grafana's settings page does: each change becomes the next options. */
function renderEditor(initial: Settings) {
  const onOptionsChange = jest.fn<(o: Settings) => void>();
  function Host() {
    const [options, setOptions] = useState(initial);
    return (
      <ConfigEditor
        options={options}
        onOptionsChange={(o) => {
          onOptionsChange(o);
          setOptions(o);
        }}
      />
    );
  }
  render(<Host />);
  const last = () => onOptionsChange.mock.calls[onOptionsChange.mock.calls.length - 1][0];
  return { onOptionsChange, last, user: userEvent.setup({ delay: null }) };
}

describe('ConfigEditor', () => {
  it('the address goes to jsonData.address', async () => {
    const { last, user } = renderEditor(settings({ jsonData: { rowLimit: 10 } }));
    const address = screen.getByLabelText(/^Address/);
    expect(address).toHaveAttribute('placeholder', 'localhost:7071');
    await user.type(address, 'flight:7071');
    expect(last().jsonData).toEqual({ rowLimit: 10, address: 'flight:7071' });
    expect(address).toHaveValue('flight:7071');
  });

  it('TLS shows its options only when on, and they go to jsonData', async () => {
    const { last, user } = renderEditor(settings());
    expect(screen.queryByLabelText('Server name')).not.toBeInTheDocument();
    expect(screen.queryByLabelText('Skip verify')).not.toBeInTheDocument();
    expect(screen.queryByLabelText('CA certificate')).not.toBeInTheDocument();

    await user.click(screen.getByRole('switch', { name: 'TLS' }));
    expect(last().jsonData).toEqual({ tls: true });
    await user.type(screen.getByLabelText('Server name'), 'trainscope.internal');
    await user.click(screen.getByRole('switch', { name: 'Skip verify' }));
    expect(last().jsonData).toEqual({ tls: true, tlsServerName: 'trainscope.internal', tlsSkipVerify: true });

    await user.click(screen.getByRole('switch', { name: 'TLS' }));
    expect(last().jsonData.tls).toBe(false);
    expect(screen.queryByLabelText('Server name')).not.toBeInTheDocument();
  });

  it('the CA certificate goes to secureJsonData, not jsonData', async () => {
    const { last, user } = renderEditor(settings({ jsonData: { tls: true } }));
    await user.type(screen.getByLabelText('CA certificate'), 'PEM');
    expect(last().secureJsonData).toEqual({ tlsCACert: 'PEM' });
    expect(last().jsonData).toEqual({ tls: true });
  });

  it('the token goes to secureJsonData and never to jsonData', async () => {
    const { last, user } = renderEditor(settings({ jsonData: { address: 'a:1' } }));
    const token = screen.getByLabelText('Token');
    expect(token).toHaveAttribute('type', 'password');
    await user.type(token, 's3cret');
    expect(last().secureJsonData).toEqual({ token: 's3cret' });
    expect(last().jsonData).toEqual({ address: 'a:1' });
    expect(JSON.stringify(last().jsonData)).not.toContain('s3cret');
  });

  it('a saved token shows as configured, and reset clears it so a new one can be typed', async () => {
    const { last, user } = renderEditor(settings({ secureJsonFields: { token: true } }));
    const token = screen.getByLabelText('Token');
    expect(token).toHaveValue('configured');
    expect(token).toBeDisabled();

    await user.click(screen.getByRole('button', { name: 'Reset' }));
    expect(last().secureJsonFields).toEqual({ token: false });
    expect(last().secureJsonData).toEqual({ token: '' });
    expect(last().jsonData).toEqual({});

    const fresh = screen.getByLabelText('Token');
    expect(fresh).toBeEnabled();
    expect(fresh).toHaveValue('');
    await user.type(fresh, 'new');
    expect(last().secureJsonData).toEqual({ token: 'new' });
  });

  it('timeout and row limit are numbers, and clearing one unsets it', async () => {
    const { last, user } = renderEditor(settings({ jsonData: { timeoutSeconds: 30 } }));
    await user.type(screen.getByLabelText('Row limit'), '5000');
    expect(last().jsonData).toEqual({ timeoutSeconds: 30, rowLimit: 5000 });
    await user.clear(screen.getByLabelText('Timeout (s)'));
    expect(last().jsonData).toEqual({ timeoutSeconds: undefined, rowLimit: 5000 });
  });
});
