// Package house holds the tests that keep hms-proxy's house in order
// (docs/architecture.md): imports point down the rooms table, no runtime
// profile is named outside the profile registry, and no hand-written Go file
// grows past 800 lines. It has no code of its own.
package house
