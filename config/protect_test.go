package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/throttle"
)

// designProtect is DESIGN.md's protect block and its classifying rules.
const designProtect = head + `admin: 127.0.0.1:9090
protect:
  max_in_flight: 200
  adaptive:
    min_in_flight: 8
    latency_target: 250ms
  queue:
    max_wait: 1s
    max_length: 1000
  shed_from: 0.8
  upstream_backoff: true
clients:
  list: [{id: partner-a, keys: [key-a], plan: gold}, {id: partner-b, keys: [key-b]}]
plans:
  gold: { claims-read: 200/m, priority: high }
rules:
  - name: claims-read
    match: { path: /claims, methods: [GET] }
    key: client
    rate: 100/m
    priority: critical
  - name: reports
    match: { path: /reports }
    priority: low
    degrade: true
`

func TestProtectAsDesignWritesIt(t *testing.T) {
	f, err := Parse("t.yaml", []byte(designProtect))
	if err != nil {
		t.Fatal(err)
	}
	want := &throttle.Config{MaxInFlight: 200, ShedFrom: 0.8, UpstreamBackoff: true,
		Adaptive: &throttle.Adaptive{MinInFlight: 8, LatencyTarget: 250 * time.Millisecond},
		Queue:    throttle.Queue{MaxWait: time.Second, MaxLength: 1000}}
	if !reflect.DeepEqual(f.Protect, want) {
		t.Errorf("Protect %+v, want %+v", f.Protect, want)
	}
	reports := f.Compiled.Rule(1)
	if !reports.Classifies() || *reports.Priority != throttle.Low || !reports.Degrade || *f.Compiled.Rule(0).Priority != throttle.Critical {
		t.Errorf("rules %+v %+v: want claims-read critical, reports low+degrade counting nothing", f.Compiled.Rule(0), reports)
	}
	a, _ := f.Compiled.CallerByID("partner-a")
	b, _ := f.Compiled.CallerByID("partner-b")
	if a.Priority(throttle.Low) != throttle.High || a.Priority(throttle.Critical) != throttle.Critical || b.Priority(throttle.Low) != throttle.Low {
		t.Errorf("plan gold raises low to %v, keeps critical at %v; no plan keeps low at %v (want high, critical, low)",
			a.Priority(throttle.Low), a.Priority(throttle.Critical), b.Priority(throttle.Low))
	}
	if lim := a.Limit(0); lim.Rate() != 200 {
		t.Errorf("plan gold's claims-read rate %d, want 200 (priority beside a rate override)", lim.Rate())
	}
}

func TestProtectDefaults(t *testing.T) {
	f, err := Parse("t.yaml", []byte(head+"protect: {max_in_flight: 5, queue: {}}\nrules: [{name: a, rate: 1/s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &throttle.Config{MaxInFlight: 5, ShedFrom: DefaultShedFrom,
		Queue: throttle.Queue{MaxWait: DefaultQueueMaxWait, MaxLength: DefaultQueueMaxLength}}
	if !reflect.DeepEqual(f.Protect, want) {
		t.Errorf("Protect %+v, want %+v", f.Protect, want)
	}
	f, err = Parse("t.yaml", []byte(head+"rules: [{name: a, rate: 1/s}]\n"))
	if err != nil || f.Protect != nil {
		t.Errorf("no protect block: Protect %+v (%v), want nil: nothing throttled", f.Protect, err)
	}
}

// A rule named priority keeps its plan override: a rate is not a priority.
func TestPlanRuleNamedPriority(t *testing.T) {
	f, err := Parse("t.yaml", []byte(head+"clients: {list: [{id: a, keys: [k], plan: p}]}\nplans: {p: {priority: 10/s}}\nrules: [{name: priority, rate: 1/s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := f.Compiled.CallerByID("a"); a.Limit(0).Rate() != 10 || f.Policy.Plans["p"].Priority != nil {
		t.Errorf("plan p: rate %d, priority %v; want the override 10/s and no priority", a.Limit(0).Rate(), f.Policy.Plans["p"].Priority)
	}
}

func TestProtectBadInput(t *testing.T) {
	rule := "rules: [{name: a, rate: 1/s}]\n"
	for _, tc := range []struct{ name, text, want string }{
		{"min above max", head + "protect: {max_in_flight: 10, adaptive: {min_in_flight: 20, latency_target: 1s}}\n" + rule,
			"t.yaml:3:56: protect.adaptive.min_in_flight: 20 is more than max_in_flight 10 (the adaptive limit moves between min_in_flight and max_in_flight: at most 10)"},
		{"latency target zero", head + "protect: {max_in_flight: 10, adaptive: {latency_target: 0s}}\n" + rule,
			"t.yaml:3:57: protect.adaptive.latency_target: 0s is out of range (more than 0, at most 24h)"},
		{"latency target negative", head + "protect: {max_in_flight: 10, adaptive: {latency_target: -5ms}}\n" + rule,
			"t.yaml:3:57: protect.adaptive.latency_target: -5ms is out of range (more than 0, at most 24h)"},
		{"latency target not a duration", head + "protect: {max_in_flight: 10, adaptive: {latency_target: fast}}\n" + rule,
			`t.yaml:3:57: protect.adaptive.latency_target: "fast" is not a duration (such as 250ms, 1s: the upstream's p99 objective)`},
		{"latency target missing", head + "protect: {max_in_flight: 10, adaptive: {min_in_flight: 2}}\n" + rule,
			"t.yaml:3:40: protect.adaptive.latency_target: missing (required; such as latency_target: 250ms)"},
		{"shed_from zero", head + "protect: {max_in_flight: 10, shed_from: 0}\n" + rule,
			"t.yaml:3:41: protect.shed_from: 0 is out of range (more than 0, at most 1: a share of the limit, such as 0.8; default 0.8)"},
		{"shed_from above one", head + "protect: {max_in_flight: 10, shed_from: 1.01}\n" + rule,
			"t.yaml:3:41: protect.shed_from: 1.01 is out of range (more than 0, at most 1: a share of the limit, such as 0.8; default 0.8)"},
		{"shed_from NaN", head + "protect: {max_in_flight: 10, shed_from: NaN}\n" + rule,
			`t.yaml:3:41: protect.shed_from: "NaN" is not a number (a share of the limit in (0, 1], such as 0.8; default 0.8)`},
		{"max_in_flight missing", head + "protect: {shed_from: 0.5}\n" + rule,
			"t.yaml:3:10: protect.max_in_flight: missing (required; such as max_in_flight: 200)"},
		{"max_in_flight zero", head + "protect: {max_in_flight: 0}\n" + rule,
			"t.yaml:3:26: protect.max_in_flight: 0 is out of range (1 to 1048576: requests at the upstream at once)"},
		{"unknown protect field", head + "protect: {max_inflight: 3}\n" + rule,
			`t.yaml:3:11: protect: unknown field "max_inflight" (did you mean "max_in_flight"? accepted: max_in_flight, adaptive, queue, shed_from, upstream_backoff, signals)`},
		{"unknown priority", head + "rules: [{name: a, rate: 1/s, priority: urgent}]\n",
			`t.yaml:3:40: rules[0].priority: unknown value "urgent" (accepted: critical, high, normal, low)`},
		{"unknown plan priority", head + "clients: {list: [{id: a, keys: [k], plan: p}]}\nplans: {p: {priority: top}}\n" + rule,
			`t.yaml:4:23: plans.p.priority: unknown value "top" (accepted: critical, high, normal, low)`},
		{"override of a classifying rule", head + "clients: {list: [{id: a, keys: [k], plan: p}]}\nplans: {p: {r: 5/s}}\nrules: [{name: r, priority: low}]\n",
			"t.yaml:4:16: plans.p.r: rule r has no rate to override: it only classifies requests (give the rule a rate, or remove this override)"},
		{"rule with nothing", head + "rules: [{name: a}]\n",
			"t.yaml:3:9: rules[0].rate: missing (required; such as rate: 100/m, or concurrency: 10; or priority/degrade for a rule that only classifies)"},
		{"rule with degrade false only", head + "rules: [{name: a, match: {path: /x}, degrade: false}]\n",
			"t.yaml:3:9: rules[0].rate: missing: the rule does nothing (give it a rate such as 100/m, a concurrency, a priority, or degrade: true)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.text))
			if err == nil {
				t.Fatal("accepted")
			}
			if got := err.Error(); !strings.Contains(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// sluice check names the protect block, the rules' classes and the plans
// that raise a priority.
func TestProtectSummary(t *testing.T) {
	f, err := Parse("t.yaml", []byte(designProtect))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"protect: at most 200 in flight, adaptive from 8 (p99 target 250ms), queue 1000 (max wait 1s), shedding from 0.8 of the limit, upstream back-off\n",
		"plans raising their clients' priority: gold high\n",
		"PRIORITY", "low, degrade", "critical", "- (classifies)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
