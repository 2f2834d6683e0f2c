import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { DataSource } from './datasource';
import { TrainscopeOptions, TrainscopeQuery, TrainscopeSecureOptions } from './types';

export const plugin = new DataSourcePlugin<DataSource, TrainscopeQuery, TrainscopeOptions, TrainscopeSecureOptions>(DataSource)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor);
