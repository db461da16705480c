package deploy

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title      string
	UID        string
	Panels     []dashboardPanel
	Templating struct {
		List []struct {
			Name, Type string
			Query      json.RawMessage // a string, or {query: ...} for a query variable
		}
	}
}

type dashboardPanel struct {
	ID         int
	Type       string
	Title      string
	Datasource *struct{ Type, UID string }
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct{ RefID, Expr string }
}

// TestGrafanaDashboardReadsLiveSeries: deploy/grafana/sluice.json is a
// dashboard Grafana can import (unique panel ids, panels within the
// 24-column grid, each query on the dashboard's Prometheus variable), and
// every series each of its queries reads, with the labels it matches and
// groups by, is in a live sluice's /metrics: a panel on a series sluice
// does not export would stay empty.
func TestGrafanaDashboardReadsLiveSeries(t *testing.T) {
	b, err := os.ReadFile("grafana/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/sluice.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("grafana/sluice.json: title %q, uid %q, %d panels; want all three", d.Title, d.UID, len(d.Panels))
	}
	queries := map[string]string{} // where -> PromQL
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
		}
		queries["variable "+v.Name] = strings.TrimSuffix(strings.TrimPrefix(q.Query, "label_values("), ")")
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d queries; want queries on ${datasource}", p.Title, p.Datasource, len(p.Targets))
		}
		for _, q := range p.Targets {
			queries["panel "+p.Title+" "+q.RefID] = q.Expr
		}
	}
	live := liveSeries(t)
	for where, q := range queries {
		for _, p := range checkQuery(live, q) {
			t.Errorf("%s: %s\n\t%s", where, p, q)
		}
	}
}
