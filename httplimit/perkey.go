package httplimit

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// RequestKey gives the key a request is counted by under a Keyed
// middleware. Every distinct string is its own counter; requests it gives
// the same key, "" among them, share one.
type RequestKey func(r *http.Request) string

// KeyByIP counts a request by the address it came from (r.RemoteAddr):
// an IPv4 address, or the /64 prefix of an IPv6 one (policy's default
// ipv6_prefix), since one host is often given a whole /64. Behind a
// reverse proxy that is the proxy's address: use New with a policy's
// trusted_proxies there, which reads the caller's from the forwarded
// header only when a trusted proxy sent it.
func KeyByIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host // not an address (a test's "pipe"): counted as it reads
	}
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(policy.DefaultIPv6Prefix)
		return p.String()
	}
	return addr.String()
}

// KeyByHeader counts a request by the value of its header field name (the
// first one), such as a tenant or an API key an authenticating proxy in
// front has checked. Requests without it share the key "": a caller
// cannot escape the limit by leaving the field out.
func KeyByHeader(name string) RequestKey {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) string { return r.Header.Get(name) }
}

// Keyed is net/http middleware over one keyed limiter (a sluice.Limiter):
// each request costs 1 under the key its RequestKey gives. An allowed
// request goes on with the RateLimit-Policy and RateLimit fields, named
// after the limiter's Name; a denied one is answered 429 with Retry-After
// and a problem+json body, without reaching the handler. When the store
// cannot decide it answers as sluice.Limiter.Allow does
// (sluice.Options.OnFailure): the request goes on without the fields, or
// is answered 503. For several rules, clients, plans and trusted proxies,
// use New with a policy. It is safe for concurrent use.
type Keyed struct {
	lim *sluice.Limiter
	key RequestKey
	own bool // lim was made by PerIP: Close closes it
}

// PerKey returns middleware that holds each request to lim, counted by the
// key key gives. lim stays the caller's to close.
func PerKey(lim *sluice.Limiter, key RequestKey) *Keyed {
	return &Keyed{lim: lim, key: key}
}

// PerIP returns middleware that holds each caller address (KeyByIP) to
// limit, in a memory store of its own that Close closes:
//
//	lim := httplimit.PerIP(limiter.MustNew(limiter.GCRA, 100, time.Minute, 20))
//	defer lim.Close()
//	http.ListenAndServe(addr, lim.Handler(mux))
func PerIP(limit limiter.Limit) *Keyed {
	return &Keyed{lim: sluice.New(limit, sluice.Options{Name: "per-ip"}), key: KeyByIP, own: true}
}

// Close closes the limiter PerIP made; a limiter given to PerKey is left
// open.
func (k *Keyed) Close() error {
	if k.own {
		return k.lim.Close()
	}
	return nil
}

// Handler returns next behind the middleware.
func (k *Keyed) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := k.lim.DecideN(r.Context(), k.key(r), 1)
		if err != nil {
			if k.lim.AllowOnError(err) {
				next.ServeHTTP(w, r)
				return
			}
			k.unavailable(w, err)
			return
		}
		k.fields(w.Header(), d)
		if !d.Allowed {
			w.Header().Set("Retry-After", strconv.FormatInt(decision.RetryAfterSeconds(d.RetryAfter), 10))
			WriteProblem(w, http.StatusTooManyRequests, "rate limit exceeded: retry in "+FormatPeriod(time.Duration(decision.RetryAfterSeconds(d.RetryAfter))*time.Second))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fields sets RateLimit-Policy and RateLimit for the decision d, as New's
// middleware writes them for a rule.
// A name that cannot be written as an sf-string without escapes is
// written as "default".
func (k *Keyed) fields(h http.Header, d limiter.Decision) {
	name := k.lim.Name()
	if strings.ContainsAny(name, "\"\\") || !isPrintable(name) {
		name = "default"
	}
	b, split := decision.AppendRateLimit(make([]byte, 0, 96), []decision.RateLimitItem{{Name: name, Limit: k.lim.Limit(), Decision: d}})
	h.Set("RateLimit-Policy", string(b[:split]))
	h.Set("RateLimit", string(b[split:]))
}

// unavailable answers 503 for a store that could not decide, with the
// store's Retry-After when it gave one (a *store.UnavailableError), else 1.
func (k *Keyed) unavailable(w http.ResponseWriter, err error) {
	wait := time.Second
	var u *store.UnavailableError
	if errors.As(err, &u) && u.RetryAfter > 0 {
		wait = u.RetryAfter
	}
	w.Header().Set("Retry-After", strconv.FormatInt(decision.RetryAfterSeconds(wait), 10))
	WriteProblem(w, http.StatusServiceUnavailable, "the rate limit store cannot decide")
}

// isPrintable reports whether s holds only printable ASCII, as an sf-string
// must.
func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
