package demo

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/sluice-rl/sluice/httplimit"
)

// claim is the state of one claim as the claims service reports it.
type claim struct {
	ID      string `json:"id"`
	Partner string `json:"partner"`
	Vehicle string `json:"vehicle"`
	Status  string `json:"status"`
}

// claims are the demo's claims by id: three of partner A, three of partner B.
var claims = map[string]claim{
	"CLM-1001": {"CLM-1001", partnerA, "VW Golf, HH-AB 123", "assessment scheduled"},
	"CLM-1002": {"CLM-1002", partnerA, "Opel Corsa, HH-CD 456", "repair approved"},
	"CLM-1003": {"CLM-1003", partnerA, "BMW 320d, HH-EF 789", "waiting for invoice"},
	"CLM-2001": {"CLM-2001", partnerB, "Audi A4, B-GH 321", "expert report received"},
	"CLM-2002": {"CLM-2002", partnerB, "Ford Focus, B-IJ 654", "paid"},
	"CLM-2003": {"CLM-2003", partnerB, "Skoda Octavia, B-KL 987", "repair in progress"},
}

// claimsService is the insurer's claims service. It authorises every request
// itself and counts, per calling partner, every request that reaches it.
type claimsService struct {
	mu      sync.Mutex
	reached map[string]int
}

// ClaimsService returns the demo's claims service, as `sluice demo` runs
// it behind sluice: GET /claims/{id} answers the partner named by
// X-Sluice-Client (partner-a owns CLM-1001 to CLM-1003, partner-b CLM-2001 to
// CLM-2003). deploy/compose runs it as the upstream of two sluice instances.
func ClaimsService() http.Handler { return newClaimsService().handler() }

func newClaimsService() *claimsService {
	return &claimsService{reached: make(map[string]int)}
}

// handler serves GET /claims/{id}: the claim as JSON if the calling partner
// owns it, 403 if it belongs to another partner, 404 if there is no such
// claim, 401 if the caller is not identified.
func (s *claimsService) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /claims/{id}", func(w http.ResponseWriter, r *http.Request) {
		partner := r.Header.Get(httplimit.ClientHeader)
		s.count(partner)
		c, ok := claims[r.PathValue("id")]
		switch {
		case partner == "":
			httplimit.WriteProblem(w, http.StatusUnauthorized, "the caller is not identified")
		case !ok:
			httplimit.WriteProblem(w, http.StatusNotFound, "no such claim")
		case c.Partner != partner:
			httplimit.WriteProblem(w, http.StatusForbidden, partner+" may not see claim "+c.ID)
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(c) // the partner went away if this fails
		}
	})
	return mux
}

func (s *claimsService) count(partner string) {
	if partner == "" {
		partner = "(unidentified)"
	}
	s.mu.Lock()
	s.reached[partner]++
	s.mu.Unlock()
}

// reachedBy is how many requests of partner reached the service.
func (s *claimsService) reachedBy(partner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reached[partner]
}
