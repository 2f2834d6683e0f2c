import React, { ChangeEvent } from 'react';
import { DataSourcePluginOptionsEditorProps } from '@grafana/data';
import { InlineField, InlineSwitch, Input, SecretInput, SecretTextArea } from '@grafana/ui';

import { TrainscopeOptions, TrainscopeSecureOptions } from '../types';

type Props = DataSourcePluginOptionsEditorProps<TrainscopeOptions, TrainscopeSecureOptions>;

const LABEL = 20;

/** Address, TLS, token, timeout and row limit. Save & test runs the backend's health check. */
export function ConfigEditor({ options, onOptionsChange }: Props) {
  const { jsonData, secureJsonFields } = options;
  const secure = (options.secureJsonData ?? {}) as TrainscopeSecureOptions;

  const setJson = (patch: Partial<TrainscopeOptions>) =>
    onOptionsChange({ ...options, jsonData: { ...jsonData, ...patch } });
  const setSecure = (key: keyof TrainscopeSecureOptions, value: string) =>
    onOptionsChange({ ...options, secureJsonData: { ...secure, [key]: value } });
  const resetSecure = (key: keyof TrainscopeSecureOptions) =>
    onOptionsChange({
      ...options,
      secureJsonFields: { ...secureJsonFields, [key]: false },
      secureJsonData: { ...secure, [key]: '' },
    });
  const num = (e: ChangeEvent<HTMLInputElement>) => {
    const n = parseInt(e.currentTarget.value, 10);
    return Number.isFinite(n) ? n : undefined;
  };

  return (
    <>
      <InlineField label="Address" labelWidth={LABEL} tooltip="Flight SQL address of 'trainscope serve --flight': host:port, or grpc+tls://host:port" required>
        <Input
          width={40}
          value={jsonData.address ?? ''}
          placeholder="localhost:7071"
          onChange={(e: ChangeEvent<HTMLInputElement>) => setJson({ address: e.currentTarget.value })}
        />
      </InlineField>
      <InlineField label="TLS" labelWidth={LABEL} tooltip="The trainscope endpoint is plain gRPC; turn on TLS when a TLS proxy fronts it">
        <InlineSwitch value={!!jsonData.tls} onChange={(e) => setJson({ tls: e.currentTarget.checked })} />
      </InlineField>
      {jsonData.tls && (
        <>
          <InlineField label="Server name" labelWidth={LABEL} tooltip="Name in the server's certificate, when it differs from the address">
            <Input
              width={40}
              value={jsonData.tlsServerName ?? ''}
              onChange={(e: ChangeEvent<HTMLInputElement>) => setJson({ tlsServerName: e.currentTarget.value })}
            />
          </InlineField>
          <InlineField label="Skip verify" labelWidth={LABEL} tooltip="Do not check the certificate (testing only)">
            <InlineSwitch value={!!jsonData.tlsSkipVerify} onChange={(e) => setJson({ tlsSkipVerify: e.currentTarget.checked })} />
          </InlineField>
          <InlineField label="CA certificate" labelWidth={LABEL} tooltip="PEM of the CA that signed the server's certificate">
            <SecretTextArea
              isConfigured={!!secureJsonFields?.tlsCACert}
              value={secure.tlsCACert ?? ''}
              cols={60}
              rows={6}
              placeholder="-----BEGIN CERTIFICATE-----"
              onChange={(e: ChangeEvent<HTMLTextAreaElement>) => setSecure('tlsCACert', e.currentTarget.value)}
              onReset={() => resetSecure('tlsCACert')}
            />
          </InlineField>
        </>
      )}
      <InlineField label="Token" labelWidth={LABEL} tooltip="Sent as 'authorization: Bearer <token>' (for an authenticating proxy)">
        <SecretInput
          width={40}
          isConfigured={!!secureJsonFields?.token}
          value={secure.token ?? ''}
          onChange={(e: ChangeEvent<HTMLInputElement>) => setSecure('token', e.currentTarget.value)}
          onReset={() => resetSecure('token')}
        />
      </InlineField>
      <InlineField label="Timeout (s)" labelWidth={LABEL} tooltip="Per-query deadline; default 30">
        <Input width={12} type="number" value={jsonData.timeoutSeconds ?? ''} placeholder="30" onChange={(e: ChangeEvent<HTMLInputElement>) => setJson({ timeoutSeconds: num(e) })} />
      </InlineField>
      <InlineField label="Row limit" labelWidth={LABEL} tooltip="Rows read per query at most; a query can lower or raise it; default 100000">
        <Input width={12} type="number" value={jsonData.rowLimit ?? ''} placeholder="100000" onChange={(e: ChangeEvent<HTMLInputElement>) => setJson({ rowLimit: num(e) })} />
      </InlineField>
    </>
  );
}
