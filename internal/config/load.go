package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/viper"
)

// Load reads the config file at path (optional; TRAINSCOPE_CONFIG when
// empty) and the environment, and returns the merged configuration. Every
// unknown key and bad value is reported, together, in one *Error.
func Load(path string) (*Config, error) {
	v := viper.New()
	v.SetEnvPrefix("TRAINSCOPE")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	def := Default()
	setDefaults(v, reflect.ValueOf(def), "")
	if path == "" {
		path = os.Getenv("TRAINSCOPE_CONFIG")
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, &Error{fmt.Errorf("config %s: %w", path, err)}
		}
	}
	var errs []error
	errs = append(errs, checkKeys(v.AllSettings(), "", configKeys(reflect.TypeOf(def)))...)
	var c Config
	if err := v.Unmarshal(&c); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		where := "config"
		if path != "" {
			where = "config " + path
		}
		return nil, &Error{fmt.Errorf("%s:\n  %w", where, indent(errors.Join(errs...)))}
	}
	return &c, nil
}

// Error is a configuration that cannot be used as given: a bad key or
// value, a file it names that cannot be read, a listener it would open to
// anyone. The binary exits 2 on one, as on a bad flag.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// keyOf is a field's config key: its mapstructure tag, "" for a field the
// config does not hold.
func keyOf(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
	if key == "-" || !f.IsExported() {
		return ""
	}
	return key
}

// setDefaults gives viper every leaf of the default config val (a struct,
// walked by its mapstructure tags): that is each key's default and what
// maps it to its TRAINSCOPE_* variable (nats.url is TRAINSCOPE_NATS_URL).
// Tables keyed by the user (detectors.thresholds) have no default.
func setDefaults(v *viper.Viper, val reflect.Value, prefix string) {
	for i := range val.NumField() {
		key := keyOf(val.Type().Field(i))
		if key == "" {
			continue
		}
		if prefix != "" {
			key = prefix + "." + key
		}
		f := val.Field(i)
		switch {
		case f.Kind() == reflect.Struct:
			setDefaults(v, f, key)
		case f.Kind() == reflect.Map:
		case f.Kind() == reflect.Slice && f.IsNil():
			v.SetDefault(key, reflect.MakeSlice(f.Type(), 0, 0).Interface())
		default:
			v.SetDefault(key, f.Interface())
		}
	}
}

// configKeys is the tree of keys a config of type t may hold: a table per
// struct, "*" for a map's keys, nil for a value.
func configKeys(t reflect.Type) any {
	switch t.Kind() {
	case reflect.Struct:
		keys := map[string]any{}
		for i := range t.NumField() {
			if key := keyOf(t.Field(i)); key != "" {
				keys[key] = configKeys(t.Field(i).Type)
			}
		}
		return keys
	case reflect.Map:
		return map[string]any{"*": configKeys(t.Elem())}
	}
	return nil
}

func indent(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), "\n", "\n  "))
}

func checkKeys(settings map[string]any, prefix string, schema any) []error {
	tables, _ := schema.(map[string]any)
	var errs []error
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		sub, ok := tables[k]
		if !ok {
			sub, ok = tables["*"]
		}
		if !ok {
			known := make([]string, 0, len(tables))
			for kk := range tables {
				known = append(known, kk)
			}
			sort.Strings(known)
			errs = append(errs, fmt.Errorf("%s: unknown key (known here: %s)", path, strings.Join(known, ", ")))
			continue
		}
		child, isMap := settings[k].(map[string]any)
		subSchema, wantMap := sub.(map[string]any)
		switch {
		case isMap && wantMap:
			errs = append(errs, checkKeys(child, path, subSchema)...)
		case isMap && !wantMap:
			errs = append(errs, fmt.Errorf("%s: expected a value, found a table", path))
		case !isMap && wantMap:
			errs = append(errs, fmt.Errorf("%s: expected a table of keys, found %v", path, settings[k]))
		}
	}
	return errs
}
