package main

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// k8sEnv is what the k8s commands may take from the user's environment:
// the archive's S3 keys.
func k8sEnv() map[string]string {
	return map[string]string{"AWS_ACCESS_KEY_ID": "$AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY": "$AWS_SECRET_ACCESS_KEY"}
}

// k8sWorld is what the documented commands have made so far: images
// built and pushed, kustomizations as kustomize edit left them,
// namespaces, Secrets, Helm repositories and releases, and what kubectl
// apply -k applied.
type k8sWorld struct {
	built, pushed map[string]bool
	kustImages    map[string][]kustImage                  // folder -> images:, once edited
	namespaces    map[string]bool                         // namespaces
	secrets       map[string]map[string]map[string]string // namespace -> Secret -> key -> value
	repos         map[string]bool                         // helm repo add
	releases      map[string]string                       // Helm release -> namespace
	applied       map[string]*k8sSet                      // folder -> what apply -k applied, with the Secrets above
}

// runK8s runs documented commands from an empty cluster and registry.
func runK8s(t *testing.T, cmds []shellCmd) (*k8sWorld, []string) {
	t.Helper()
	w := &k8sWorld{built: map[string]bool{}, pushed: map[string]bool{}, kustImages: map[string][]kustImage{},
		namespaces: map[string]bool{}, secrets: map[string]map[string]map[string]string{}, repos: map[string]bool{},
		releases: map[string]string{}, applied: map[string]*k8sSet{}}
	var problems []string
	for _, c := range cmds {
		problems = append(problems, w.run(t, c)...)
	}
	return w, problems
}

// cmdOptions splits args into the values of the flags named (each once,
// "-f value") and the rest; any other flag is an error.
func cmdOptions(args []string, flags ...string) (map[string]string, []string, error) {
	opts := map[string]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		switch {
		case slices.Contains(flags, args[i]) && i+1 < len(args):
			if _, dup := opts[args[i]]; dup {
				return nil, nil, fmt.Errorf("%s twice", args[i])
			}
			opts[args[i]] = args[i+1]
			i++
		case strings.HasPrefix(args[i], "-"):
			return nil, nil, fmt.Errorf("no test knows the flag %s", args[i])
		default:
			rest = append(rest, args[i])
		}
	}
	return opts, rest, nil
}

// secretRefs are the Secret keys a Helm values tree reads (every
// secretKeyRef in it, as "name/key").
func secretRefs(v any) []string {
	var refs []string
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["secretKeyRef"].(map[string]any); ok {
			refs = append(refs, fmt.Sprint(r["name"], "/", r["key"]))
		}
		for _, x := range v {
			refs = append(refs, secretRefs(x)...)
		}
	case []any:
		for _, x := range v {
			refs = append(refs, secretRefs(x)...)
		}
	}
	return refs
}

// run is one documented command; its problems. Each command must find
// what it needs made by an earlier one, as the real one would.
func (w *k8sWorld) run(t *testing.T, c shellCmd) []string {
	t.Helper()
	a := c.words
	bad := func(f string, args ...any) []string { return []string{c.text + ": " + fmt.Sprintf(f, args...)} }
	has := func(prefix ...string) bool { return len(a) >= len(prefix) && slices.Equal(a[:len(prefix)], prefix) }
	if c.dir != "" && !has("kustomize", "edit", "set", "image") {
		return bad("no test knows this shape in (cd DIR && ...)")
	}
	switch {
	case has("docker", "build"):
		opts, rest, err := cmdOptions(a[2:], "-f", "-t")
		switch {
		case err != nil:
			return bad("%v", err)
		case opts["-t"] == "" || !slices.Equal(rest, []string{"."}):
			return bad("want docker build [-f Dockerfile] -t IMAGE . (the repository root, where .dockerignore is)")
		}
		f := cmp.Or(opts["-f"], "Dockerfile")
		if _, err := os.Stat(f); err != nil {
			return bad("%v", err)
		}
		w.built[opts["-t"]] = true
	case has("docker", "push") && len(a) == 3:
		if !w.built[a[2]] {
			return bad("%s was not built by an earlier step", a[2])
		}
		w.pushed[a[2]] = true
	case has("kustomize", "edit", "set", "image") && len(a) == 5 && c.dir != "":
		name, ref, ok := strings.Cut(a[4], "=")
		if !ok {
			return bad("want NAME=IMAGE")
		}
		images, edited := w.kustImages[filepath.Clean(c.dir)]
		if !edited {
			var kust struct {
				Images []kustImage `json:"images"`
			}
			raw, err := os.ReadFile(filepath.Join(c.dir, "kustomization.yaml"))
			if err != nil {
				return bad("%v", err)
			}
			if err := yaml.Unmarshal(raw, &kust); err != nil {
				return bad("%v", err)
			}
			images = kust.Images
		}
		im := kustImage{Name: name}
		newName, tag := splitImage(ref)
		if newName != name {
			im.NewName = newName
		}
		if d, ok := strings.CutPrefix(tag, "@"); ok {
			im.Digest = d
		} else {
			im.NewTag = strings.TrimPrefix(tag, ":")
		}
		images = slices.DeleteFunc(slices.Clone(images), func(x kustImage) bool { return x.Name == name })
		w.kustImages[filepath.Clean(c.dir)] = append(images, im)
	case has("kubectl", "create", "namespace") && len(a) == 4:
		if w.namespaces[a[3]] {
			return bad("namespace %s exists already", a[3])
		}
		w.namespaces[a[3]] = true
	case len(a) >= 8 && a[0] == "kubectl" && a[1] == "-n" && slices.Equal(a[3:6], []string{"create", "secret", "generic"}):
		ns, name := a[2], a[6]
		if !w.namespaces[ns] {
			return bad("namespace %s does not exist yet", ns)
		}
		if w.secrets[ns][name] != nil {
			return bad("Secret %s exists already", name)
		}
		keys := map[string]string{}
		for _, lit := range a[7:] {
			kv, ok := strings.CutPrefix(lit, "--from-literal=")
			k, v, ok2 := strings.Cut(kv, "=")
			if !ok || !ok2 || k == "" || v == "" {
				return bad("%s: want --from-literal=KEY=VALUE", lit)
			}
			if _, dup := keys[k]; dup {
				return bad("key %s twice", k)
			}
			keys[k] = v
		}
		if w.secrets[ns] == nil {
			w.secrets[ns] = map[string]map[string]string{}
		}
		w.secrets[ns][name] = keys
	case has("helm", "repo", "add") && len(a) == 5:
		if !strings.HasPrefix(a[4], "https://") {
			return bad("want an https URL")
		}
		w.repos[a[3]] = true
	case has("helm", "install"):
		opts, rest, err := cmdOptions(a[2:], "-n", "-f")
		if err != nil {
			return bad("%v", err)
		}
		if len(rest) != 2 || opts["-n"] == "" || opts["-f"] == "" {
			return bad("want helm install RELEASE REPO/CHART -n NAMESPACE -f VALUES")
		}
		release, chart, ns := rest[0], rest[1], opts["-n"]
		var problems []string
		if repo, _, _ := strings.Cut(chart, "/"); !w.repos[repo] {
			problems = append(problems, bad("no earlier helm repo add %s", repo)...)
		}
		if !w.namespaces[ns] {
			problems = append(problems, bad("namespace %s does not exist yet", ns)...)
		}
		if _, ok := w.releases[release]; ok {
			problems = append(problems, bad("release %s is installed already", release)...)
		}
		raw, err := os.ReadFile(opts["-f"])
		if err != nil {
			return append(problems, bad("%v", err)...)
		}
		var values any
		if err := yaml.Unmarshal(raw, &values); err != nil {
			return append(problems, bad("%v", err)...)
		}
		for _, ref := range secretRefs(values) {
			name, key, _ := strings.Cut(ref, "/")
			if _, ok := w.secrets[ns][name][key]; !ok {
				problems = append(problems, bad("%s reads Secret %s key %s, which no earlier step creates in %s", opts["-f"], name, key, ns)...)
			}
		}
		w.releases[release] = ns
		return problems
	case has("kubectl", "apply", "-k") && len(a) == 4:
		return w.apply(t, c, a[3])
	default:
		return bad("no test knows this command shape")
	}
	return nil
}

// apply is kubectl apply -k dir: what it needs must exist already, the
// namespace, every Secret and key a pod reads, each container's image
// (after images:, as kustomize edit left it) pushed, and the NATS release
// the configs dial installed in the namespace.
func (w *k8sWorld) apply(t *testing.T, c shellCmd, dir string) []string {
	t.Helper()
	bad := func(f string, args ...any) string { return c.text + ": " + fmt.Sprintf(f, args...) }
	var problems []string
	s := loadK8s(t, filepath.Clean(dir))
	if images, ok := w.kustImages[filepath.Clean(dir)]; ok {
		s.images = images
	}
	ns := s.namespace
	if !w.namespaces[ns] && !slices.Contains(s.namespaces, ns) {
		problems = append(problems, bad("namespace %s does not exist yet", ns))
	}
	secrets := w.secrets[ns]
	need := func(who, name, key string) {
		if _, ok := secrets[name]; !ok {
			problems = append(problems, bad("%s reads Secret %s, which no earlier step creates in %s", who, name, ns))
		} else if _, ok := secrets[name][key]; key != "" && !ok {
			problems = append(problems, bad("%s reads key %s of Secret %s, which has %v", who, key, name, slices.Sorted(maps.Keys(secrets[name]))))
		}
	}
	for name, pod := range s.pods() {
		for _, v := range pod.Volumes {
			if v.Secret != nil {
				need(name, v.Secret.SecretName, "")
				for _, it := range v.Secret.Items {
					need(name, v.Secret.SecretName, it.Key)
				}
			}
		}
		for _, ctr := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			for _, e := range ctr.Env {
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
					need(name, r.SecretKeyRef.Name, r.SecretKeyRef.Key)
				}
			}
			for _, e := range ctr.EnvFrom {
				if e.SecretRef != nil {
					need(name, e.SecretRef.Name, "")
				}
			}
			if im := s.image(ctr.Image); !w.pushed[im] {
				problems = append(problems, bad("%s runs %s (manifest %s, then images:), which no earlier step pushed", name, im, ctr.Image))
			}
		}
	}
	for name, cm := range s.configMaps {
		for key, text := range cm.Data {
			var cfg struct {
				NATS struct {
					URL string `json:"url"`
				} `json:"nats"`
			}
			yaml.Unmarshal([]byte(text), &cfg)
			for _, u := range strings.Split(cfg.NATS.URL, ",") {
				host, _, _ := net.SplitHostPort(strings.TrimPrefix(u, "nats://"))
				if release, rest, ok := strings.Cut(host, "."); u != "" && (!ok || w.releases[release] != ns || rest != ns+".svc") {
					problems = append(problems, bad("ConfigMap %s %s dials %s: no earlier helm install of release %s in %s", name, key, u, release, ns))
				}
			}
		}
	}
	// the pods see the Secrets the commands made
	s.secrets = map[string]*corev1.Secret{}
	for name, keys := range secrets {
		s.secrets[name] = &corev1.Secret{StringData: maps.Clone(keys)}
	}
	w.applied[filepath.Clean(dir)] = s
	return problems
}

// The commands in deploy/README.md (run by TestDeployK8s too) through
// runK8s, and moved out of order, which must fail for the reason given:
// the namespace before its Secrets, the Secrets before helm install, the
// image built, pushed and set before kubectl apply -k, NATS before the
// pods that dial it. A command of any other shape fails, so the docs
// cannot drift from what this test knows. The commands in
// nats-values.yaml's comment work on their own; those in
// kustomization.yaml's work after the README's.
func TestDeployK8sCommands(t *testing.T) {
	vars := k8sEnv()
	readme, problems := shellCommands(readmeBlock(t, "kubectl apply -k"), vars)
	values, p := shellCommands(commentCommands(t, filepath.Join("deploy", "k8s", "nats-values.yaml")), k8sEnv())
	problems = append(problems, p...)
	kust, p := shellCommands(commentCommands(t, filepath.Join("deploy", "k8s", "kustomization.yaml")), vars)
	problems = append(problems, p...)
	w, p := runK8s(t, values)
	problems = append(problems, p...)
	if len(w.releases) == 0 {
		problems = append(problems, "nats-values.yaml's comment installs no release")
	}
	_, p = runK8s(t, append(slices.Clone(readme), kust...)) // the README's, then these
	problems = append(problems, p...)
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		return
	}
	wants := func(name string, cmds []shellCmd, want string) {
		t.Helper()
		_, p := runK8s(t, cmds)
		if !slices.ContainsFunc(p, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("%s: want a problem saying %q, got %q", name, want, p)
		}
	}
	for _, m := range [][3]string{
		{"kubectl -n trainscope create secret generic trainscope-nats", "kubectl create namespace", "namespace trainscope does not exist yet"},
		{"helm install", "kubectl -n trainscope create secret generic trainscope-nats", "reads Secret trainscope-nats key password, which no earlier step creates"},
		{"helm install", "helm repo add", "no earlier helm repo add nats"},
		{"kubectl apply -k", "kubectl -n trainscope create secret generic trainscope-archive", "reads Secret trainscope-archive, which no earlier step creates"},
		{"kubectl apply -k", "helm install", "no earlier helm install of release nats"},
		{"kubectl apply -k", "docker push", "which no earlier step pushed"},
		{"docker push", "docker build", "was not built by an earlier step"},
	} {
		wants(fmt.Sprintf("%q moved before %q", m[0], m[1]), moveBefore(t, readme, m[0], m[1]), m[2])
	}
	noEdit := slices.DeleteFunc(slices.Clone(readme), func(c shellCmd) bool { return strings.Contains(c.text, "kustomize edit") })
	wants("without kustomize edit", noEdit, "runs registry.example.com/trainscope:0.1.0 (manifest trainscope, then images:), which no earlier step pushed")
	for extra, want := range map[string]string{
		"kubectl apply -f deploy/k8s/secrets.example.yaml":                                            "no test knows this command shape",
		"kubectl create namespace trainscope":                                                         "namespace trainscope exists already",
		"helm install nats nats/nats -n trainscope -f deploy/k8s/nats-values.yaml --create-namespace": "no test knows the flag --create-namespace",
	} {
		cmds, _ := shellCommands(extra, map[string]string{})
		wants(extra+" after the README's commands", append(slices.Clone(readme), cmds...), want)
	}
}
