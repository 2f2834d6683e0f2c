package main

import (
	"bytes"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/internal/config"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// k8sSet is deploy/k8s decoded into the Kubernetes API's own types.
type k8sSet struct {
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	services     map[string]*corev1.Service
	statefulSets map[string]*appsv1.StatefulSet
	deployments  map[string]*appsv1.Deployment
	daemonSets   map[string]*appsv1.DaemonSet
	namespaces   []string
	namespace    string      // kustomization's namespace:
	images       []kustImage // kustomization's images:
}

// kustImage is one entry of a kustomization's images: transformer.
type kustImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// splitImage cuts an image reference into its name and its ":tag" or
// "@digest".
func splitImage(ref string) (name, tag string) {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		return ref[:i], ref[i:]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[:i], ref[i:]
	}
	return ref, ""
}

// image is the image a container runs once the images: transformer has
// rewritten what the manifest names.
func (s *k8sSet) image(ref string) string {
	name, tag := splitImage(ref)
	for _, im := range s.images {
		if im.Name != name {
			continue
		}
		if im.NewName != "" {
			name = im.NewName
		}
		if im.NewTag != "" {
			tag = ":" + im.NewTag
		}
		if im.Digest != "" {
			tag = "@" + im.Digest
		}
		break
	}
	return name + tag
}

// pods are the pod templates of the workloads, by workload name.
func (s *k8sSet) pods() map[string]corev1.PodSpec {
	pods := map[string]corev1.PodSpec{}
	for n, o := range s.statefulSets {
		pods[n] = o.Spec.Template.Spec
	}
	for n, o := range s.deployments {
		pods[n] = o.Spec.Template.Spec
	}
	for n, o := range s.daemonSets {
		pods[n] = o.Spec.Template.Spec
	}
	return pods
}

// loadK8s reads every manifest kustomization.yaml lists, each document
// strictly: a field the API type does not have is an error. Every other
// yaml file of dir is in its resources but nats-values.yaml (Helm's) and
// the examples (*.example.yaml), which are not; it applies no Secret: the
// documented kubectl create secret commands make them, and applying
// placeholders would overwrite them.
func loadK8s(t *testing.T, dir string) *k8sSet {
	t.Helper()
	var kust struct {
		Namespace string      `json:"namespace"`
		Resources []string    `json:"resources"`
		Images    []kustImage `json:"images"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &kust); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		base := filepath.Base(f)
		example := strings.HasSuffix(base, ".example.yaml")
		if base != "kustomization.yaml" && base != "nats-values.yaml" && !example && !slices.Contains(kust.Resources, base) {
			t.Errorf("%s is not in kustomization.yaml's resources", base)
		}
		if example && slices.Contains(kust.Resources, base) {
			t.Errorf("kustomization.yaml applies %s, an example", base)
		}
	}
	s := &k8sSet{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}, services: map[string]*corev1.Service{},
		statefulSets: map[string]*appsv1.StatefulSet{}, deployments: map[string]*appsv1.Deployment{}, daemonSets: map[string]*appsv1.DaemonSet{},
		namespace: kust.Namespace, images: kust.Images}
	for _, r := range kust.Resources {
		raw, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", r, err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---\n")) {
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name, Namespace string
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s document %d: %v", r, i+1, err)
			}
			var obj any
			switch head.APIVersion + " " + head.Kind {
			case "v1 Namespace":
				s.namespaces = append(s.namespaces, head.Metadata.Name)
				obj = &corev1.Namespace{}
			case "v1 ConfigMap":
				o := &corev1.ConfigMap{}
				obj, s.configMaps[head.Metadata.Name] = o, o
			case "v1 Secret":
				t.Errorf("%s applies Secret %s: create it with the documented kubectl create secret instead (see secrets.example.yaml)", r, head.Metadata.Name)
				obj = &corev1.Secret{}
			case "v1 Service":
				o := &corev1.Service{}
				obj, s.services[head.Metadata.Name] = o, o
			case "apps/v1 StatefulSet":
				o := &appsv1.StatefulSet{}
				obj, s.statefulSets[head.Metadata.Name] = o, o
			case "apps/v1 Deployment":
				o := &appsv1.Deployment{}
				obj, s.deployments[head.Metadata.Name] = o, o
			case "apps/v1 DaemonSet":
				o := &appsv1.DaemonSet{}
				obj, s.daemonSets[head.Metadata.Name] = o, o
			default:
				t.Fatalf("%s document %d: %s %s is not a kind this test knows", r, i+1, head.APIVersion, head.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Errorf("%s document %d (%s %s): %v", r, i+1, head.Kind, head.Metadata.Name, err)
			}
			if head.Kind != "Namespace" && head.Metadata.Namespace != kust.Namespace {
				t.Errorf("%s %s: namespace %q, want %q", head.Kind, head.Metadata.Name, head.Metadata.Namespace, kust.Namespace)
			}
		}
	}
	return s
}

// The secret key a container reads, resolved: whether it exists.
func (s *k8sSet) secretKey(name, key string) bool {
	sec, ok := s.secrets[name]
	if !ok {
		return false
	}
	_, ok = sec.StringData[key]
	if !ok {
		_, ok = sec.Data[key]
	}
	return ok
}

// deploy/k8s, as the commands in deploy/README.md apply it (see
// runK8s: the Secrets, the image and NATS are what those commands make):
// every manifest is a valid object of its Kubernetes API type (strictly
// decoded); every ConfigMap a pod refers to exists; the manifests name
// the image plainly and kustomization's images: pins it; the configs the
// pods mount pass trainscope's validation with the documented Secrets;
// serve's pods probe /healthz on the port serve.http listens on and
// request CPU and memory; ingestors are a StatefulSet named by pod, with
// storage; the agent is a DaemonSet on GPU nodes watching a mounted
// folder; the NATS Helm values cluster three JetStream nodes with the
// password from the Secret; and secrets.example.yaml shows the Secrets
// and keys the commands create.
func TestDeployK8s(t *testing.T) {
	dir := filepath.Join("deploy", "k8s")
	cmds, problems := shellCommands(readmeBlock(t, "kubectl apply -k"), k8sEnv())
	docs, more := runK8s(t, cmds)
	for _, p := range append(problems, more...) {
		t.Error(p)
	}
	s := docs.applied[dir]
	if s == nil {
		t.Fatalf("deploy/README.md never runs kubectl apply -k %s", dir)
	}
	if len(s.statefulSets) != 1 || len(s.deployments) != 1 || len(s.daemonSets) != 1 {
		t.Fatalf("%d StatefulSets, %d Deployments, %d DaemonSets: want ingest, query, agent", len(s.statefulSets), len(s.deployments), len(s.daemonSets))
	}
	ing, query, agent := s.statefulSets["ingest"], s.deployments["query"], s.daemonSets["agent"]
	if ing == nil || query == nil || agent == nil {
		t.Fatal("want StatefulSet ingest, Deployment query, DaemonSet agent")
	}
	type workload struct {
		name   string
		labels map[string]string
		pod    corev1.PodSpec
		pvcs   []string
	}
	var pvcs []string
	for _, c := range ing.Spec.VolumeClaimTemplates {
		pvcs = append(pvcs, c.Name)
	}
	loads := []workload{
		{"ingest", ing.Spec.Template.Labels, ing.Spec.Template.Spec, pvcs},
		{"query", query.Spec.Template.Labels, query.Spec.Template.Spec, nil},
		{"agent", agent.Spec.Template.Labels, agent.Spec.Template.Spec, nil},
	}
	configs := map[string]*config.Config{}
	for _, w := range loads {
		volumes := map[string]corev1.Volume{}
		for _, v := range w.pod.Volumes {
			volumes[v.Name] = v
			if v.ConfigMap != nil && s.configMaps[v.ConfigMap.Name] == nil {
				t.Errorf("%s mounts ConfigMap %s, which does not exist", w.name, v.ConfigMap.Name)
			}
			// the Secrets it reads: checked by runK8s's kubectl apply -k
		}
		for _, c := range w.pod.Containers {
			if name, tag := splitImage(c.Image); tag != "" || strings.Contains(name, "/") || !slices.ContainsFunc(s.images, func(im kustImage) bool { return im.Name == name }) {
				t.Errorf("%s: image %q: want a plain name that kustomization.yaml's images: sets", w.name, c.Image)
			}
			if im := s.image(c.Image); !strings.Contains(im, ":") || strings.HasSuffix(im, ":latest") {
				t.Errorf("%s: image %q: want a pinned tag", w.name, im)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("%s: no CPU or memory request", w.name)
			}
			mounts := map[string]string{} // mount path -> volume
			for _, m := range c.VolumeMounts {
				if _, ok := volumes[m.Name]; !ok && !slices.Contains(w.pvcs, m.Name) {
					t.Errorf("%s mounts volume %s, which the pod does not have", w.name, m.Name)
				}
				mounts[m.MountPath] = m.Name
			}
			// the config file it is given: a ConfigMap key, valid
			i := slices.Index(c.Args, "--config")
			if i < 0 {
				t.Fatalf("%s: no --config in %v", w.name, c.Args)
			}
			cfgDir, key := filepath.Split(c.Args[i+1])
			vol := volumes[mounts[filepath.Clean(cfgDir)]]
			if vol.ConfigMap == nil {
				t.Fatalf("%s: %s is not on a mounted ConfigMap", w.name, c.Args[i+1])
			}
			text, ok := s.configMaps[vol.ConfigMap.Name].Data[key]
			if !ok {
				t.Fatalf("%s: ConfigMap %s has no %s", w.name, vol.ConfigMap.Name, key)
			}
			// secrets mounted as files: the token file must be one
			var remap []string
			for path, name := range mounts {
				if v := volumes[name]; v.Secret != nil {
					for k, val := range s.secrets[v.Secret.SecretName].StringData {
						f := filepath.Join(t.TempDir(), k)
						os.WriteFile(f, []byte(val), 0o600)
						remap = append(remap, filepath.Join(path, k), f)
					}
				}
			}
			f := filepath.Join(t.TempDir(), key)
			if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			// the environment the pod gives it, secrets resolved
			var set []string
			for _, e := range c.Env {
				val := e.Value
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
					val = s.secrets[r.SecretKeyRef.Name].StringData[r.SecretKeyRef.Key]
				} else if r != nil && r.FieldRef != nil {
					val = w.name + "-0"
				}
				t.Setenv(e.Name, val)
				set = append(set, e.Name)
			}
			configs[w.name] = validConfig(t, f, remap...)
			for _, e := range set {
				os.Unsetenv(e)
			}
			if w.name == "agent" {
				j := slices.Index(c.Args, "--runs-in")
				if j < 0 || mounts[c.Args[j+1]] == "" || volumes[mounts[c.Args[j+1]]].HostPath == nil {
					t.Errorf("agent: --runs-in should name a mounted host folder: args %v", c.Args)
				}
				continue
			}
			// serve: probes on /healthz at serve.http's port
			_, httpPort, _ := net.SplitHostPort(configs[w.name].Serve.HTTP)
			var named int32
			for _, p := range c.Ports {
				if p.Name == "http" {
					named = p.ContainerPort
				}
			}
			if strconv.Itoa(int(named)) != httpPort {
				t.Errorf("%s: port http is %d, serve.http listens on %s", w.name, named, httpPort)
			}
			for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "http" {
					t.Errorf("%s: %s probe %+v: want GET /healthz on port http", w.name, what, p)
				}
			}
			if !strings.HasPrefix(configs[w.name].Serve.Auth.TokenFile, "/") {
				t.Errorf("%s: no Flight SQL token", w.name)
			}
		}
		// a Service selects these pods, on ports they have
		for _, svc := range s.services {
			sel := svc.Spec.Selector
			match := len(sel) > 0
			for k, v := range sel {
				match = match && w.labels[k] == v
			}
			if match && svc.Name != w.name {
				t.Errorf("Service %s selects %s's pods", svc.Name, w.name)
			}
		}
	}
	if ing.Spec.ServiceName != "ingest" || s.services["ingest"] == nil || s.services["ingest"].Spec.ClusterIP != "None" {
		t.Error("the StatefulSet needs its headless Service ingest")
	}
	if s.services["query"] == nil {
		t.Error("no Service for the query node")
	}
	if !slices.Contains(pvcs, "data") {
		t.Error("ingestors keep no volume of their own")
	}
	member := false
	for _, e := range ing.Spec.Template.Spec.Containers[0].Env {
		member = member || e.Name == "TRAINSCOPE_INGEST_MEMBER" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}
	if !member {
		t.Error("an ingestor's ingest.member must be its pod name (TRAINSCOPE_INGEST_MEMBER from metadata.name)")
	}
	if !configs["query"].Serve.QueryOnly || configs["query"].Serve.Archive != configs["ingest"].Serve.Archive {
		t.Errorf("the query node serves %q (query only %v); the ingestors write %q", configs["query"].Serve.Archive, configs["query"].Serve.QueryOnly, configs["ingest"].Serve.Archive)
	}
	if configs["ingest"].Stream.Partitions < 2 || configs["agent"].NATS.URL != configs["ingest"].NATS.URL {
		t.Error("ingestors must share a partitioned stream the agents publish to")
	}
	if agent.Spec.Template.Spec.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Error("the agent DaemonSet should run on GPU nodes only")
	}

	// the NATS chart's values
	raw, err := os.ReadFile(filepath.Join(dir, "nats-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Config struct {
			Cluster struct {
				Enabled  bool
				Replicas int
			}
			Jetstream struct {
				Enabled   bool
				FileStore struct{ Enabled bool } `json:"fileStore"`
			}
			Merge map[string]any
		}
		Container struct {
			Env map[string]corev1.EnvVar
		}
	}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("nats-values.yaml: %v", err)
	}
	if !v.Config.Cluster.Enabled || v.Config.Cluster.Replicas != 3 || !v.Config.Jetstream.Enabled || !v.Config.Jetstream.FileStore.Enabled {
		t.Errorf("nats-values.yaml: cluster %+v, jetstream %+v: want 3 clustered JetStream nodes on files", v.Config.Cluster, v.Config.Jetstream)
	}
	if configs["ingest"].Stream.Replicas > v.Config.Cluster.Replicas {
		t.Errorf("stream.replicas %d > %d NATS nodes", configs["ingest"].Stream.Replicas, v.Config.Cluster.Replicas)
	}
	pw := v.Container.Env["NATS_PASSWORD"].ValueFrom
	if pw == nil || pw.SecretKeyRef == nil || !s.secretKey(pw.SecretKeyRef.Name, pw.SecretKeyRef.Key) {
		t.Error("nats-values.yaml: NATS_PASSWORD should come from an existing Secret key")
	}
	if !strings.Contains(string(raw), "user: trainscope") || configs["ingest"].NATS.User != "trainscope" {
		t.Error("NATS and the ingestors should agree on the user trainscope")
	}

	// secrets.example.yaml shows what the commands create, key for key
	raw, err = os.ReadFile(filepath.Join(dir, "secrets.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	example := map[string][]string{}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var sec corev1.Secret
		if err := yaml.UnmarshalStrict(doc, &sec); err != nil {
			t.Fatalf("secrets.example.yaml: %v", err)
		}
		if sec.Namespace != s.namespace {
			t.Errorf("secrets.example.yaml: Secret %s in namespace %q, want %q", sec.Name, sec.Namespace, s.namespace)
		}
		for k := range sec.StringData {
			example[sec.Name] = append(example[sec.Name], k)
		}
	}
	created := map[string][]string{}
	for name, keys := range docs.secrets[s.namespace] {
		for k := range keys {
			created[name] = append(created[name], k)
		}
	}
	for _, m := range []map[string][]string{example, created} {
		for _, keys := range m {
			slices.Sort(keys)
		}
	}
	if !maps.EqualFunc(example, created, slices.Equal) {
		t.Errorf("secrets.example.yaml shows Secrets %v; the commands in deploy/README.md create %v", example, created)
	}
}
