// Package doccheck holds no code, only tests that keep the user
// documentation (README.md, docs/) true to the code: the Go in README.md is
// a copy of example tests, and each Go block of docs/library.md a whole
// example test file, that `go test` compiles and runs.
package doccheck
