// Package config reads sluice's YAML configuration file: the gateway's own
// settings (where to listen, the upstream, the admin address, the store) and
// the policy (clients, plans, rules) that package policy compiles. It is the
// only package of sluice that knows YAML.
//
// ParsePolicy and LoadPolicy read only the policy part (rules, clients,
// plans), for a Go program that keeps its rules in a file of their own
// and hands them to httplimit: no listen or upstream is required, and the
// gateway's settings, if present, are skipped.
//
// Parse and Load check the whole file at once and report every problem they
// find, each with its position, as Errors:
//
//	sluice.yaml:12:11: rules[0].rate: "100/mn": unknown period "mn" (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)
//	sluice.yaml:14:5: rules[0]: unknown field "algoritm" (did you mean "algorithm"? accepted: name, match, ...)
//
// Unknown fields, duplicate keys, values of the wrong kind, YAML aliases and
// files that are not UTF-8 text are errors, never silently ignored; so is a
// limit that cannot work (a cost above what a limit ever allows at once).
// Settings that work but are dangerous (an admin address other machines can
// reach without a token, every address a trusted proxy) are returned as
// File.Warnings, with positions too. Secrets may be references (env:NAME,
// file:PATH, literal:TEXT). The format is described field by field in
// docs/configuration.md.
package config
