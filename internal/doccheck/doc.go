// Package doccheck holds no code, only tests that keep the user
// documentation (README.md, docs/) true to the code: the Go in README.md is
// a copy of example tests that `go test` compiles and runs.
package doccheck
