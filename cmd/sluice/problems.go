package main

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/sluice-rl/sluice/config"
)

// problem is one entry of `sluice check --format json`: an error or a
// warning, where it is and what it says.
type problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`     // 0: the whole file
	Col      int    `json:"col"`      // 0: the whole line, or the whole file
	Field    string `json:"field"`    // the field's path, such as rules[0].rate; "" for the file
	Message  string `json:"message"`  // without the field's path
	Severity string `json:"severity"` // error or warning
}

// writeProblems writes check's verdict on the file at path as a JSON array
// on w: err's problems, or cfg's warnings when err is nil. It returns the
// exit status check has in text form: 1 on an error, else 0.
func writeProblems(w io.Writer, path string, cfg *config.File, err error) int {
	out, code := []problem{}, 0
	var errs config.Errors
	switch {
	case errors.As(err, &errs):
		out, code = appendProblems(out, errs, "error"), 1
	case err != nil: // the file could not be read
		out, code = append(out, problem{File: path, Message: err.Error(), Severity: "error"}), 1
	default:
		out = appendProblems(out, cfg.Warnings, "warning")
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return 1
	}
	return code
}

func appendProblems(out []problem, es config.Errors, severity string) []problem {
	for _, e := range es {
		out = append(out, problem{File: e.File, Line: e.Line, Col: e.Col, Field: e.Field, Message: e.Problem(), Severity: severity})
	}
	return out
}
