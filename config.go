package main

import (
	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/internal/config"
)

// Config is the loaded configuration (internal/config) with the names the
// commands size their pools by.
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

// cores is config.Config.Cores.
func (c *Config) cores() int { return c.Cores() }

// duckThreads is config.Config.DuckThreads.
func (c *Config) duckThreads() int { return c.DuckThreads() }

// machineMemory is config.MachineMemory.
func machineMemory() int64 { return config.MachineMemory() }

// defaultServe is the default serve section, for flags' help texts.
var defaultServe = config.Default().Serve

// detectorsConfig is config.Config.DetectorsConfig.
func (c *Config) detectorsConfig() detectors.Config { return c.DetectorsConfig() }
