package main

import (
	"github.com/trainscope/trainscope/internal/config"
)

// Config is the loaded configuration (internal/config), with the
// --threads flag's setter (threads.go).
type Config struct{ config.Config }

// loadConfig is config.Load for a command: a bad config is an
// *config.Error, which exits 2.
func loadConfig(path string) (*Config, error) {
	c, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return &Config{*c}, nil
}

// defaultServe is the default serve section, for flags' help texts.
var defaultServe = config.Default().Serve
