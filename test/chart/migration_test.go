package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The migration tables of the originals' Helm charts are data
// (testdata/migration/<original>.yaml): docs/migration.md's tables are written
// from them, and the tests below hold them to the originals' value paths,
// to this chart's values, and to what this chart renders from a
// translated example. So the table a user follows is the one tested.

// originals are the charts this one replaces.
var originals = []string{"k8s-eni-tagger", "aws-multi-eni-controller"}

type migration struct {
	Original string         `json:"original"`
	Implied  map[string]any `json:"implied"`
	Required []struct {
		Path string `json:"path"`
		Note string `json:"note"`
	} `json:"required"`
	Values []valueMapping `json:"values"`
}

type valueMapping struct {
	From        string   `json:"from"`
	To          []string `json:"to"`
	As          string   `json:"as"`
	Note        string   `json:"note"`
	Reason      string   `json:"reason"`
	NotInValues bool     `json:"notInValues"`
}

func migrationDir(c chart) string {
	return filepath.Join(c.root, "test", "chart", "testdata", "migration")
}

func loadMigration(t *testing.T, c chart, original string) migration {
	t.Helper()
	var m migration
	readYAML(t, filepath.Join(migrationDir(c), original+".yaml"), &m)
	if m.Original != original {
		t.Fatalf("%s.yaml names %q", original, m.Original)
	}
	return m
}

// forEachMigration runs check in a subtest for each original, with this
// chart, its values and the original's migration table.
func forEachMigration(t *testing.T, check func(t *testing.T, c chart, ours map[string]any, original string, m migration)) {
	c := newChart(t)
	ours := chartValues(t, c)
	for _, original := range originals {
		t.Run(original, func(t *testing.T) { check(t, c, ours, original, loadMigration(t, c, original)) })
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// originalPaths reads <original>.paths: the leaves of the original's
// values.yaml.
func originalPaths(t *testing.T, c chart, original string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(migrationDir(c), original+".paths"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// covers says whether the entry for from is the one for path: the path
// itself or one below it.
func covers(from, path string) bool {
	return path == from || strings.HasPrefix(path, from+".")
}

func (m migration) entryFor(path string) (valueMapping, bool) {
	for _, e := range m.Values {
		if covers(e.From, path) {
			return e, true
		}
	}
	return valueMapping{}, false
}

// lookup walks a dotted path through nested maps.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func setPath(m map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

func chartValues(t *testing.T, c chart) map[string]any {
	t.Helper()
	var v map[string]any
	readYAML(t, filepath.Join(c.dir, "values.yaml"), &v)
	return v
}

// Every value of each original's chart has exactly one entry, saying
// which values of this chart take it (each one a value that exists here)
// or why none is needed.
func TestMigrationTableCoversOriginalValues(t *testing.T) {
	forEachMigration(t, func(t *testing.T, c chart, ours map[string]any, original string, m migration) {
		paths := originalPaths(t, c, original)
		for _, p := range paths {
			n := 0
			for _, e := range m.Values {
				if covers(e.From, p) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s value %s has %d entries in %s.yaml, want 1", original, p, n, original)
			}
		}
		for _, e := range m.Values {
			checkEntry(t, e, paths, ours)
		}
		for k := range m.Implied {
			if _, ok := lookup(ours, k); !ok {
				t.Errorf("implied %s is no value of this chart", k)
			}
		}
		for _, r := range m.Required {
			if _, ok := lookup(ours, r.Path); !ok || r.Note == "" {
				t.Errorf("required %s: no value of this chart, or no note", r.Path)
			}
		}
		t.Logf("%d values of %s in %d entries", len(paths), original, len(m.Values))
	})
}

func checkEntry(t *testing.T, e valueMapping, paths []string, ours map[string]any) {
	t.Helper()
	if (len(e.To) == 0) == (e.Reason == "") {
		t.Errorf("%s: give either to or reason", e.From)
	}
	if e.Reason != "" && (e.Note != "" || e.As != "") {
		t.Errorf("%s: a reason takes no note or as", e.From)
	}
	for _, to := range e.To {
		if _, ok := lookup(ours, to); !ok {
			t.Errorf("%s -> %s: no such value in this chart's values.yaml", e.From, to)
		}
	}
	if kind, _, _ := strings.Cut(e.As, " "); !slices.Contains([]string{"", "port", "env", "envList", "logLevel", "replace"}, kind) {
		t.Errorf("%s: unknown as %q", e.From, e.As)
	}
	found := slices.ContainsFunc(paths, func(p string) bool { return covers(e.From, p) })
	if found == e.NotInValues {
		t.Errorf("%s: notInValues is %v, but the original's values.yaml has it: %v", e.From, e.NotInValues, found)
	}
}

// translate turns values of the original's chart into values of this one,
// through the table.
func translate(t *testing.T, m migration, ours, theirs map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range m.Implied {
		setPath(out, k, v)
	}
	for _, leaf := range leaves(theirs, "") {
		if _, ok := m.entryFor(leaf); !ok {
			t.Errorf("the example sets %s, which the table does not know", leaf)
		}
	}
	for _, e := range m.Values {
		v, ok := lookup(theirs, e.From)
		if !ok || len(e.To) == 0 {
			continue
		}
		for _, to := range e.To {
			setPath(out, to, convert(t, e, to, v, out, ours))
		}
	}
	return out
}

// convert carries one value of the original's chart to the value to of
// this one, as the entry's `as` says.
func convert(t *testing.T, e valueMapping, to string, v any, out, ours map[string]any) any {
	t.Helper()
	kind, arg, _ := strings.Cut(e.As, " ")
	switch kind {
	case "port":
		s := fmt.Sprint(v)
		port, err := strconv.Atoi(s[strings.LastIndex(s, ":")+1:])
		if err != nil {
			t.Fatalf("%s: %q is no address or port", e.From, s)
		}
		return port
	case "env", "envList":
		list, _ := lookupAny(out, to).([]any)
		add := map[string]any{arg: v}
		if kind == "envList" {
			add = v.(map[string]any)
		}
		for _, name := range sortedKeys(add) {
			list = append(list, map[string]any{"name": name, "value": fmt.Sprint(add[name])})
		}
		return list
	case "logLevel":
		if v == true {
			return "debug"
		}
		return "info"
	case "replace":
		repl := map[string]any{}
		def, _ := lookupAny(ours, to).(map[string]any)
		for k := range def {
			repl[k] = nil // Helm drops a key set to null from the merged values.
		}
		for k, x := range v.(map[string]any) {
			repl[k] = x
		}
		return repl
	}
	return v
}

// lookupAny is lookup's value, nil when the path is absent.
func lookupAny(m map[string]any, path string) any {
	v, _ := lookup(m, path)
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// leaves lists the paths of the values set in v (maps are walked, so a
// free-form map such as annotations yields its keys, which the entry of
// the map covers).
func leaves(v any, prefix string) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{prefix}
	}
	var out []string
	for _, k := range sortedKeys(m) {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		out = append(out, leaves(m[k], p)...)
	}
	return out
}

// Each original's documented kind of values, translated by the table,
// render this chart with every setting in place: the objects carry them,
// the operator's and the agent's flag parsers accept the arguments, and
// the API server takes the objects (server-side dry run).
func TestMigrationExamplesRender(t *testing.T) {
	forEachMigration(t, func(t *testing.T, c chart, ours map[string]any, original string, m migration) {
		var theirs map[string]any
		readYAML(t, filepath.Join(migrationDir(c), original+".example.yaml"), &theirs)
		values := translate(t, m, ours, theirs)
		// The values the original had no equivalent for are the user's
		// to add; the test adds its own.
		for _, r := range m.Required {
			setPath(values, r.Path, "migrated")
		}
		b, err := yaml.Marshal(values)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Logf("translated values:\n%s", b)
		objs := c.render(t, file)
		for _, w := range migrationExpectations[original] {
			w.check(t, objs)
		}
		checkOperatorArgs(t, containerArgs(t, find(t, objs, "Deployment", opName)))
		if original == "aws-multi-eni-controller" {
			checkAgentArgs(t, c, containerArgs(t, find(t, objs, "DaemonSet", agentName)))
		}
		apply(t, objs)
	})
}

// want is one fact about a rendered object: the value at path (dotted;
// "args", "env" and "image" name the first container's arguments and environment,
// which must contain the wanted entries, and the image's prefix), or, with absent, that the path
// is missing.
type want struct {
	kind, name, path string
	value            any
	absent           bool
}

const (
	opName    = "rel-eni-operator"
	agentName = "rel-eni-operator-agent"
	pod       = "spec.template.spec."
	ctr0      = "spec.template.spec.containers.0."
)

func (w want) check(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	o := find(t, objs, w.kind, w.name)
	switch w.path {
	case "args":
		args := containerArgs(t, o)
		for _, a := range w.value.([]string) {
			if !slices.Contains(args, a) {
				t.Errorf("%s %s: argument %s missing from %v", w.kind, w.name, a, args)
			}
		}
		return
	case "image":
		if img := fmt.Sprint(fieldAt(o.Object, ctr0+"image")); !strings.HasPrefix(img, w.value.(string)) {
			t.Errorf("%s %s: image %s, want %s…", w.kind, w.name, img, w.value)
		}
		return
	case "env":
		env := fmt.Sprint(fieldAt(o.Object, ctr0+"env"))
		for _, e := range w.value.([]string) {
			if !strings.Contains(env, e) {
				t.Errorf("%s %s: env %s missing from %s", w.kind, w.name, e, env)
			}
		}
		return
	}
	got := fieldAt(o.Object, w.path)
	if w.absent {
		if got != nil {
			t.Errorf("%s %s: %s is %v, want none", w.kind, w.name, w.path, got)
		}
		return
	}
	// Compare as YAML documents: numbers decode alike on both sides.
	gb, _ := yaml.Marshal(got)
	wb, _ := yaml.Marshal(w.value)
	var g, wv any
	_ = yaml.Unmarshal(gb, &g)
	_ = yaml.Unmarshal(wb, &wv)
	if !reflect.DeepEqual(g, wv) {
		t.Errorf("%s %s: %s is\n%s want\n%s", w.kind, w.name, w.path, gb, wb)
	}
}

// fieldAt walks a dotted path; a number indexes a list.
func fieldAt(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func yamlValue(s string) any {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// thisImage is this chart's own image: the originals' image values name
// their programs and are not carried over.
const thisImage = "ghcr.io/eni-operator/eni-operator:"

// migrationExpectations are what the rendered chart must carry from each
// original's example (testdata/migration/<original>.example.yaml).
var migrationExpectations = map[string][]want{
	"k8s-eni-tagger": {
		{kind: "Deployment", name: opName, path: "spec.replicas", value: 3},
		{kind: "Deployment", name: opName, path: "image", value: thisImage},
		{kind: "Deployment", name: opName, path: ctr0 + "imagePullPolicy", value: "Always"},
		{kind: "Deployment", name: opName, path: pod + "imagePullSecrets", value: yamlValue(`[{name: registry-pull}]`)},
		{kind: "Deployment", name: opName, path: "args", value: []string{
			"--leader-elect", "--metrics-bind-address=:9095", "--health-probe-bind-address=:8082",
			"--annotation-key=eni-tagger.io/tags", "--watch-namespace=payments", "--max-concurrent-reconciles=12",
			"--dry-run=false", "--subnet-ids=subnet-0a1b2c3d,subnet-4e5f6a7b", "--allow-shared-eni-tagging=false",
			"--enable-eni-cache=true", "--enable-cache-configmap=true", "--aws-rate-limit-qps=20", "--aws-rate-limit-burst=50",
			"--pprof-bind-address=0", "--tag-namespace=enable", "--pod-rate-limit-qps=0.5", "--pod-rate-limit-burst=2",
		}},
		{kind: "Deployment", name: opName, path: "env", value: []string{"map[name:AWS_REGION value:eu-west-1]", "map[name:AWS_STS_REGIONAL_ENDPOINTS value:regional]"}},
		{kind: "Deployment", name: opName, path: ctr0 + "ports", value: yamlValue(`[{name: metrics, containerPort: 9095, protocol: TCP}, {name: health, containerPort: 8082, protocol: TCP}]`)},
		{kind: "Deployment", name: opName, path: ctr0 + "resources", value: yamlValue(`{limits: {cpu: 750m, memory: 384Mi}, requests: {cpu: 150m, memory: 160Mi}}`)},
		{kind: "Deployment", name: opName, path: pod + "nodeSelector", value: yamlValue(`{node.kubernetes.io/role: controller}`)},
		{kind: "Deployment", name: opName, path: pod + "tolerations", value: yamlValue(`[{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]`)},
		{kind: "Deployment", name: opName, path: pod + "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution.0.weight", value: 100},
		{kind: "Deployment", name: opName, path: "spec.template.metadata.annotations", value: yamlValue(`{example.com/owner: networking}`)},
		{kind: "Deployment", name: opName, path: "spec.template.metadata.labels.cost-center", value: "4711"},
		{kind: "ServiceAccount", name: opName, path: "metadata.annotations", value: yamlValue(`{eks.amazonaws.com/role-arn: "arn:aws:iam::111122223333:role/pod-eni-tags"}`)},
		{kind: "ServiceAccount", name: opName, path: "metadata.labels.team", value: "networking"},
		{kind: "Deployment", name: opName, path: ctr0 + "envFrom", value: yamlValue(`[{configMapRef: {name: eni-tagger-extra-settings}}]`)},
		{kind: "Deployment", name: opName, path: ctr0 + "volumeMounts", value: yamlValue(`[{name: scratch, mountPath: /scratch}]`)},
		{kind: "Deployment", name: opName, path: pod + "volumes", value: yamlValue(`[{name: scratch, emptyDir: {}}]`)},
		{kind: "Service", name: opName + "-metrics", path: "spec.type", value: "ClusterIP"},
		{kind: "Service", name: opName + "-metrics", path: "spec.ports.0.port", value: 9095},
		{kind: "Service", name: opName + "-metrics", path: "metadata.annotations", value: yamlValue(`{prometheus.io/scrape: "true", prometheus.io/port: "9095"}`)},
	},
	"aws-multi-eni-controller": {
		{kind: "Deployment", name: opName, path: "image", value: thisImage},
		{kind: "Deployment", name: opName, path: ctr0 + "imagePullPolicy", value: "IfNotPresent"},
		{kind: "Deployment", name: opName, path: "args", value: []string{
			"--cluster-name=migrated", "--leader-elect", "--metrics-bind-address=:8085", "--zap-log-level=debug",
			"--nodeeni-max-parallel-nodes=5", "--nodeeni-max-concurrent-reconciles=10",
		}},
		{kind: "Deployment", name: opName, path: "env", value: []string{"map[name:AWS_REGION value:us-west-2]"}},
		{kind: "Deployment", name: opName, path: ctr0 + "resources", value: yamlValue(`{limits: {cpu: 400m, memory: 256Mi}, requests: {cpu: 50m, memory: 96Mi}}`)},
		{kind: "Deployment", name: opName, path: pod + "securityContext", value: yamlValue(`{runAsNonRoot: true, runAsUser: 1000, runAsGroup: 65532, fsGroup: 2000, seccompProfile: {type: RuntimeDefault}}`)},
		{kind: "Deployment", name: opName, path: pod + "terminationGracePeriodSeconds", value: 45},
		{kind: "Deployment", name: opName, path: pod + "serviceAccountName", value: "eni-controller"},
		{kind: "Deployment", name: opName, path: "spec.template.metadata.labels.team", value: "telco"},
		// The node agent replaces the eni-manager DaemonSet: the same nodes
		// (only the original's selector), tolerations, resources, DPDK.
		{kind: "DaemonSet", name: agentName, path: pod + "nodeSelector", value: yamlValue(`{role: worker, ng: multi-eni}`)},
		{kind: "DaemonSet", name: agentName, path: pod + "tolerations", value: yamlValue(`[{key: eni-operator.io/interfaces-not-ready, operator: Exists, effect: NoSchedule}, {key: dedicated, value: multi-eni, effect: NoSchedule}]`)},
		{kind: "DaemonSet", name: agentName, path: ctr0 + "resources", value: yamlValue(`{limits: {cpu: 300m, memory: 192Mi}, requests: {cpu: 30m, memory: 64Mi}}`)},
		{kind: "DaemonSet", name: agentName, path: ctr0 + "securityContext.privileged", value: true},
		{kind: "DaemonSet", name: agentName, path: "args", value: []string{"--zap-log-level=info", "--dpdk-driver=igb_uio", "--sriov-config=/etc/pcidp/config.json"}},
		{kind: "DaemonSet", name: agentName, path: "spec.template.metadata.labels.team", value: "telco"},
		{kind: "ServiceAccount", name: "eni-controller", path: "metadata.annotations", value: yamlValue(`{eks.amazonaws.com/role-arn: "arn:aws:iam::111122223333:role/multi-eni"}`)},
		{kind: "Service", name: opName + "-metrics", path: "spec.ports.0.port", value: 9085},
		{kind: "Service", name: opName + "-metrics", path: "spec.ports.0.targetPort", value: "metrics"},
		{kind: "Deployment", name: opName, path: ctr0 + "ports.0.containerPort", value: 8085},
		{kind: "Service", name: opName + "-metrics", path: "spec.type", value: "ClusterIP"},
	},
}

// The tables of the originals' chart values in docs/migration.md are written
// from the data: ENI_UPDATE_README=1 rewrites them, otherwise a difference fails.
func TestMigrationTablesInDocs(t *testing.T) {
	c := newChart(t)
	var sections []testenv.GeneratedSection
	for _, original := range originals {
		sections = append(sections, testenv.GeneratedSection{
			Begin:   "<!-- BEGIN chart values of " + original + ": generated from test/chart/testdata/migration/" + original + ".yaml -->",
			End:     "<!-- END chart values of " + original + " -->",
			Content: valuesTable(loadMigration(t, c, original)),
		})
	}
	testenv.CheckDoc(t, "docs/migration.md", sections)
}

func valuesTable(m migration) string {
	var s strings.Builder
	fmt.Fprintf(&s, "| %s value | eni-operator value | note |\n|---|---|---|\n", m.Original)
	for _, e := range m.Values {
		from := "`" + e.From + "`"
		if e.NotInValues {
			from += " (documented, not in its values.yaml)"
		}
		if e.Reason != "" {
			fmt.Fprintf(&s, "| %s | not needed | %s |\n", from, cell(e.Reason))
			continue
		}
		var to []string
		for _, p := range e.To {
			to = append(to, "`"+p+"`")
		}
		fmt.Fprintf(&s, "| %s | %s%s | %s |\n", from, strings.Join(to, ", "), asText(e.As), cell(e.Note))
	}
	for _, k := range sortedKeys(m.Implied) {
		fmt.Fprintf(&s, "| — | `%s: %v` | always, replacing this chart |\n", k, m.Implied[k])
	}
	for _, r := range m.Required {
		fmt.Fprintf(&s, "| — | `%s` (required) | %s |\n", r.Path, cell(r.Note))
	}
	return s.String()
}

// cell escapes the | that would end a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func asText(as string) string {
	kind, arg, _ := strings.Cut(as, " ")
	return map[string]string{
		"":         "",
		"port":     " (its port number)",
		"env":      " (entry `" + arg + "`)",
		"envList":  " (one entry each)",
		"logLevel": " (`debug` when true, else `info`)",
		"replace":  " (replacing the default)",
	}[kind]
}
