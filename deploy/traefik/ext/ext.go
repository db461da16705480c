// Package ext stands in for Traefik's dynamic-configuration extension
// module, which Traefik's own go.mod replaces with a directory of its
// repository that its published module leaves out: without it, Traefik's
// package dynamic cannot be built outside that repository. In open-source
// Traefik each of these types is an empty struct, embedded inline in
// dynamic.HTTPConfiguration and dynamic.Router, so they add no field to a
// configuration file; this stand-in declares them the same way.
package ext

// HTTP extends dynamic.HTTPConfiguration; it has no fields.
type HTTP struct{}

// Router extends dynamic.Router; it has no fields.
type Router struct{}

// RouterIng extends the routers of Traefik's ingress annotations; it has
// no fields.
type RouterIng struct{}

// ToRouter returns the Router a RouterIng stands for: an empty one.
func (RouterIng) ToRouter() Router { return Router{} }
