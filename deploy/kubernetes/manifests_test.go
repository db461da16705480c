// Package kubernetes holds no code: its test decodes sluice's Kubernetes
// manifests strictly into the Kubernetes API types (k8s.io/api, and
// prometheus-operator's for the ServiceMonitor), refusing unknown fields,
// checks their ConfigMap's configuration as sluice check does, and checks
// that the pieces fit (probes, ports, selectors, secrets, grace period). It
// is a module of its own, so that those types stay out of sluice's go.mod.
package kubernetes

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/sluice-rl/sluice/config"
)

// kustomization is the part of kustomize's file the manifests use; decoded
// strictly, so a field kustomize would not read fails the test.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Resources  []string
	Patches    []struct{ Path string }
	Replicas   []struct {
		Name  string
		Count int
	}
}

// objects are the manifests of one directory, decoded.
type objects struct {
	configMaps   map[string]*corev1.ConfigMap
	deployments  map[string]*appsv1.Deployment
	services     map[string]*corev1.Service
	pdbs         map[string]*policyv1.PodDisruptionBudget
	monitors     map[string]*monitoringv1.ServiceMonitor
	kustomize    kustomization
	resourceDirs []string // other directories its kustomization includes
}

// load decodes every manifest of dir (each document of each *.yaml) into
// its API type, refusing unknown and duplicate fields.
func load(t *testing.T, dir string) *objects {
	t.Helper()
	o := &objects{configMaps: map[string]*corev1.ConfigMap{}, deployments: map[string]*appsv1.Deployment{},
		services: map[string]*corev1.Service{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		monitors: map[string]*monitoringv1.ServiceMonitor{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no manifests (%v)", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			if err := o.add(doc); err != nil {
				t.Errorf("%s (document %d): %v", f, i+1, err)
			}
		}
	}
	for _, r := range o.kustomize.Resources {
		p := filepath.Join(dir, r)
		st, err := os.Stat(p)
		switch {
		case err != nil:
			t.Errorf("%s/kustomization.yaml: resource %s: %v", dir, r, err)
		case st.IsDir():
			o.resourceDirs = append(o.resourceDirs, p)
		}
	}
	for _, p := range o.kustomize.Patches {
		if _, err := os.Stat(filepath.Join(dir, p.Path)); err != nil {
			t.Errorf("%s/kustomization.yaml: patch %s: %v", dir, p.Path, err)
		}
	}
	return o
}

// add decodes one document by its apiVersion and kind.
func (o *objects) add(doc []byte) error {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	strict := func(into any) error { return yaml.UnmarshalStrict(doc, into) }
	name := tm.Metadata.Name
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 ConfigMap":
		o.configMaps[name] = &corev1.ConfigMap{}
		return strict(o.configMaps[name])
	case "v1 Service":
		o.services[name] = &corev1.Service{}
		return strict(o.services[name])
	case "apps/v1 Deployment":
		o.deployments[name] = &appsv1.Deployment{}
		return strict(o.deployments[name])
	case "policy/v1 PodDisruptionBudget":
		o.pdbs[name] = &policyv1.PodDisruptionBudget{}
		return strict(o.pdbs[name])
	case "monitoring.coreos.com/v1 ServiceMonitor":
		o.monitors[name] = &monitoringv1.ServiceMonitor{}
		return strict(o.monitors[name])
	case "kustomize.config.k8s.io/v1beta1 Kustomization":
		return strict(&o.kustomize)
	}
	return fmt.Errorf("%s %s: a kind the test does not know", tm.APIVersion, tm.Kind)
}

// TestBase: the base decodes, its configuration passes sluice check with
// the environment the Deployment gives it, and the pieces fit.
func TestBase(t *testing.T) {
	o := load(t, "base")
	dep := o.deployments["sluice"]
	if dep == nil {
		t.Fatal("base: no Deployment sluice")
	}
	cfg := checkConfig(t, "base", o.configMaps["sluice"], dep)
	checkDeployment(t, dep, cfg)
	checkService(t, o.services["sluice"], dep, cfg)
	if pdb := o.pdbs["sluice"]; pdb == nil || !selects(pdb.Spec.Selector.MatchLabels, dep.Spec.Template.Labels) ||
		pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("base: PodDisruptionBudget sluice %+v: want maxUnavailable 1 of sluice's pods", pdb)
	}
	checkMonitor(t, o.monitors["sluice"], o.services["sluice"], dep)
}

// TestRedisVariant: the Redis variant adds a Redis and replaces the base's
// configuration by one counting in it, on three instances; that
// configuration passes sluice check and names the Redis Service.
func TestRedisVariant(t *testing.T) {
	o := load(t, "redis")
	if !slices.Contains(o.resourceDirs, filepath.Join("redis", "../base")) {
		t.Errorf("redis/kustomization.yaml: resources %v, want ../base", o.kustomize.Resources)
	}
	if len(o.kustomize.Replicas) != 1 || o.kustomize.Replicas[0].Name != "sluice" || o.kustomize.Replicas[0].Count < 2 {
		t.Errorf("redis/kustomization.yaml: replicas %+v, want sluice at several", o.kustomize.Replicas)
	}
	base := load(t, "base")
	cfg := checkConfig(t, "redis", o.configMaps["sluice"], base.deployments["sluice"])
	if cfg.Store.Type != "redis" || cfg.Store.Instances != o.kustomize.Replicas[0].Count {
		t.Errorf("redis: store %s with instances %d, want redis with %d (the replicas)", cfg.Store.Type, cfg.Store.Instances, o.kustomize.Replicas[0].Count)
	}
	svc := o.services["sluice-redis"]
	red := o.deployments["sluice-redis"]
	if svc == nil || red == nil || !selects(svc.Spec.Selector, red.Spec.Template.Labels) {
		t.Fatal("redis: want a Deployment and a Service sluice-redis selecting its pods")
	}
	want := net.JoinHostPort(svc.Name, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	if !slices.Equal(cfg.Store.Redis.Addrs, []string{want}) {
		t.Errorf("redis: store.redis.addrs %v, want [%s]", cfg.Store.Redis.Addrs, want)
	}
	checkHardened(t, red)
}

// checkConfig runs sluice check on the ConfigMap's sluice.yaml with the
// environment variables the Deployment sets (each secret a placeholder):
// no error, no warning.
func checkConfig(t *testing.T, where string, cm *corev1.ConfigMap, dep *appsv1.Deployment) *config.File {
	t.Helper()
	if cm == nil || cm.Data["sluice.yaml"] == "" {
		t.Fatalf("%s: no ConfigMap sluice with sluice.yaml", where)
	}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		t.Setenv(e.Name, "k8s-test-placeholder-"+strings.ToLower(e.Name))
	}
	p := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(p, []byte(cm.Data["sluice.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatalf("%s: sluice check of the ConfigMap's sluice.yaml:\n%v", where, err)
	}
	for _, w := range cfg.Warnings {
		t.Errorf("%s: sluice check of the ConfigMap's sluice.yaml: warning %v", where, w)
	}
	return cfg
}

// checkDeployment: sluice serve (the image's entrypoint) reads the mounted
// ConfigMap's file from a directory mount (so that it sees the ConfigMap's
// updates), its ports are the configuration's, the probes ask /healthz and
// /readyz on the admin port, the grace period outlasts the drain, and the
// pod is hardened.
func checkDeployment(t *testing.T, dep *appsv1.Deployment, cfg *config.File) {
	t.Helper()
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "sluice" ||
		len(c.VolumeMounts) != 1 || c.VolumeMounts[0].SubPath != "" || !slices.Equal(c.Args, []string{"--config", c.VolumeMounts[0].MountPath + "/sluice.yaml"}) {
		t.Errorf("Deployment: args %v, volumes %+v, mounts %+v; want --config on ConfigMap sluice mounted as a directory", c.Args, pod.Volumes, c.VolumeMounts)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != port(t, cfg.Listen) || ports["admin"] != port(t, cfg.Admin) {
		t.Errorf("Deployment: container ports %v, want http %s and admin %s as configured", ports, cfg.Listen, cfg.Admin)
	}
	for _, pr := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.ReadinessProbe, "/readyz"}, {c.LivenessProbe, "/healthz"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil || pr.probe.HTTPGet.Path != pr.path || pr.probe.HTTPGet.Port.String() != "admin" {
			t.Errorf("Deployment: probe %+v, want GET %s on the admin port", pr.probe, pr.path)
		}
	}
	drain := cfg.Server.ShutdownDelay + cfg.Server.DrainTimeout
	grace := time.Duration(-1) // unset: Kubernetes' default of 30s, which the manifest should not leave to chance
	if g := pod.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if grace <= drain || cfg.Server.ShutdownDelay == 0 {
		t.Errorf("Deployment: terminationGracePeriodSeconds %v, shutdown_delay %v; want a shutdown_delay, and the grace above shutdown_delay + drain_timeout (%v)",
			grace, cfg.Server.ShutdownDelay, drain)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("Deployment: resources %+v, want cpu and memory requests and a memory limit", c.Resources)
	}
	checkHardened(t, dep)
}

// checkHardened: non-root, read-only root filesystem, no privilege
// escalation, no capabilities, the runtime's seccomp profile.
func checkHardened(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	pod := dep.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("Deployment %s: pod securityContext %+v, want non-root with RuntimeDefault seccomp", dep.Name, psc)
	}
	for _, c := range pod.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
			*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("Deployment %s: container %s securityContext %+v, want a read-only root, no escalation, capabilities dropped", dep.Name, c.Name, sc)
		}
	}
}

// checkService: the Service selects sluice's pods and its ports lead to
// the container's named ports.
func checkService(t *testing.T, svc *corev1.Service, dep *appsv1.Deployment, cfg *config.File) {
	t.Helper()
	if svc == nil || !selects(svc.Spec.Selector, dep.Spec.Template.Labels) {
		t.Fatalf("Service sluice %+v: want one selecting sluice's pods", svc)
	}
	named := map[string]bool{}
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		named[p.Name] = true
	}
	for _, p := range svc.Spec.Ports {
		if !named[p.TargetPort.String()] {
			t.Errorf("Service sluice: port %s targets %s, not a container port", p.Name, p.TargetPort.String())
		}
	}
}

// checkMonitor: the ServiceMonitor scrapes /metrics on the Service's admin
// port with the admin token the Deployment gives sluice.
func checkMonitor(t *testing.T, sm *monitoringv1.ServiceMonitor, svc *corev1.Service, dep *appsv1.Deployment) {
	t.Helper()
	if sm == nil || len(sm.Spec.Endpoints) != 1 || !selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
		t.Fatalf("ServiceMonitor sluice %+v: want one endpoint on the Service sluice", sm)
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != "admin" || ep.Path != "/metrics" || ep.Authorization == nil || ep.Authorization.Credentials == nil {
		t.Fatalf("ServiceMonitor: endpoint %+v, want /metrics on port admin with the admin token", ep)
	}
	var token *corev1.SecretKeySelector
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "SLUICE_ADMIN_TOKEN" && e.ValueFrom != nil {
			token = e.ValueFrom.SecretKeyRef
		}
	}
	if cr := ep.Authorization.Credentials; token == nil || cr.Name != token.Name || cr.Key != token.Key {
		t.Errorf("ServiceMonitor: credentials %s/%s, sluice's admin token %+v: want the same secret", cr.Name, cr.Key, token)
	}
}

// selects reports whether selector matches labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func port(t *testing.T, hostPort string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}
