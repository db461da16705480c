package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluice-rl/sluice/config"
)

// stickyEnvoy is Envoy's recipe for sticky sessions; the tests do not run
// Envoy, they decode it into Envoy's own API types.
const stickyEnvoy = "envoy/sluice-sticky.yaml"

// distributedDoc is the operators' page on several instances, which shows
// the recipes.
const distributedDoc = "../docs/distributed.md"

// fenced is a fenced block of a Markdown page: its language and text.
var fenced = regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```")

// TestStickyRecipesInDocs: docs/distributed.md shows each sticky-session
// recipe of deploy/ whole, as one block equal to the file, and its
// sluice.yaml for the instances is a configuration sluice accepts.
func TestStickyRecipesInDocs(t *testing.T) {
	doc, err := os.ReadFile(distributedDoc)
	if err != nil {
		t.Fatal(err)
	}
	blocks := fenced.FindAllStringSubmatch(string(doc), -1)
	for _, file := range []string{stickyRecipe, stickyEnvoy, stickyHAProxy} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, bl := range blocks {
			found = found || bl[2] == string(b)
		}
		if !found {
			t.Errorf("docs/distributed.md has no block equal to deploy/%s (copy the file into it again)", file)
		}
	}
	parsed := 0
	for _, bl := range blocks {
		if bl[1] != "yaml" || !strings.HasPrefix(bl[2], "# sluice.yaml") {
			continue
		}
		parsed++
		if _, err := config.Parse("sluice.yaml (docs/distributed.md)", []byte(bl[2])); err != nil {
			t.Errorf("docs/distributed.md's sluice.yaml block, lines counted from the block:\n%v", err)
		}
	}
	if parsed == 0 {
		t.Error("docs/distributed.md has no ```yaml block starting with # sluice.yaml (the instances' configuration)")
	}
}

// TestEnvoyStickyConfig: deploy/envoy/sluice-sticky.yaml is a valid Envoy
// bootstrap (decoded as Envoy decodes it, every message validated) whose
// one route hashes on the access key, terminally, then on the caller's
// address, into a RING_HASH cluster of the instances.
func TestEnvoyStickyConfig(t *testing.T) {
	b, err := os.ReadFile(stickyEnvoy)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", stickyEnvoy, err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var bs bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &bs); err != nil {
		t.Fatalf("%s is not an Envoy bootstrap: %v", stickyEnvoy, err)
	}
	validateAll(t, stickyEnvoy, &bs)

	ls := bs.GetStaticResources().GetListeners()
	if len(ls) != 1 || len(ls[0].GetFilterChains()) != 1 || len(ls[0].GetFilterChains()[0].GetFilters()) != 1 {
		t.Fatalf("%s: want one listener with one filter chain of one filter", stickyEnvoy)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := ls[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatalf("%s: the listener's filter: %v", stickyEnvoy, err)
	}
	vhs := hcm.GetRouteConfig().GetVirtualHosts()
	if len(vhs) != 1 || len(vhs[0].GetRoutes()) != 1 {
		t.Fatalf("%s: want one virtual host with one route", stickyEnvoy)
	}
	route := vhs[0].GetRoutes()[0].GetRoute()
	hp := route.GetHashPolicy()
	if len(hp) != 2 || hp[0].GetHeader().GetHeaderName() != "x-api-key" || !hp[0].GetTerminal() ||
		!hp[1].GetConnectionProperties().GetSourceIp() {
		t.Errorf("%s: hash_policy %v, want the x-api-key header (terminal), then source_ip", stickyEnvoy, hp)
	}
	var cluster *clusterv3.Cluster
	for _, c := range bs.GetStaticResources().GetClusters() {
		if c.GetName() == route.GetCluster() {
			cluster = c
		}
	}
	if cluster == nil {
		t.Fatalf("%s: the route's cluster %q is not defined", stickyEnvoy, route.GetCluster())
	}
	if cluster.GetLbPolicy() != clusterv3.Cluster_RING_HASH {
		t.Errorf("%s: cluster %s has lb_policy %v, want RING_HASH (a hash_policy does nothing under round robin)",
			stickyEnvoy, cluster.GetName(), cluster.GetLbPolicy())
	}
	if n := len(cluster.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()); n != 3 {
		t.Errorf("%s: %d instances, want the three of the example", stickyEnvoy, n)
	}
}
