package live

import "time"

// Finding is one typical mistake recognised over the period.
type Finding struct {
	Kind string `json:"kind"`
}

// findings are rs's findings at t over period; rs.mu is held.
func (rs *ruleState) findings(t int64, period time.Duration) []Finding { return nil }

// storeFindings are the findings of the store at t.
func (l *Live) storeFindings(t int64, in Inputs) []Finding { return nil }

func sortFindings([]Finding) {}
