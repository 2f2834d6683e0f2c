// Package config is trainscope's configuration: one Config with a section
// per part of the product (detectors, duckdb, nats, stream, publish,
// ingest, serve, agent), its defaults written once (Default), and Load,
// which merges a config file and TRAINSCOPE_* variables over them and
// refuses every unknown key and bad value together, each section
// validating itself under its key path. It also sizes the pools from the
// core count (Cores, DuckThreads) and the machine's memory.
//
// It lives under internal/: it is the binary's own wiring, which nothing
// outside this module imports.
package config
