package image

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

func deploymentOf(t *testing.T, objs []object) appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	only(t, objs, "Deployment").decode(t, &d)
	return d
}

func controllerContainer(t *testing.T, d appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "controller" {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container named controller", d.Name)
	return corev1.Container{}
}

// portNumber resolves a probe's or Service's port, by number or by name.
func portNumber(c corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return 0
}

// deployments is the Deployment as written and as each install renders it.
func deployments(t *testing.T) map[string][]object {
	t.Helper()
	out := map[string][]object{
		"file": {only(t, manifestFiles(t, "deploy"), "Deployment")},
	}
	for _, v := range variants {
		out[v.name] = render(t, v.dir)
	}
	return out
}

func TestDeployment(t *testing.T) {
	for name, objs := range deployments(t) {
		t.Run(name, func(t *testing.T) {
			d := deploymentOf(t, objs)
			spec := d.Spec.Template.Spec
			c := controllerContainer(t, d)

			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
				got := "unset"
				if d.Spec.Replicas != nil {
					got = strconv.Itoa(int(*d.Spec.Replicas))
				}
				t.Errorf("replicas = %s, want 2 (one leader, one standby)", got)
			}
			if !slices.Contains(c.Args, "--leader-elect=true") {
				t.Errorf("args %q lack --leader-elect=true: two replicas would reconcile at once", c.Args)
			}
			if d.Spec.Selector == nil || !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
				t.Errorf("selector %v does not match the pod labels %v", d.Spec.Selector, d.Spec.Template.Labels)
			}

			if c.Image != "database-controller:latest" || c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("image %q pull policy %q, want database-controller:latest, IfNotPresent", c.Image, c.ImagePullPolicy)
			}

			// Probes on the health port, metrics on a named port.
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{
				{"liveness", c.LivenessProbe, "/healthz"},
				{"readiness", c.ReadinessProbe, "/readyz"},
			} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("no HTTP %s probe", p.name)
					continue
				}
				if port := portNumber(c, p.probe.HTTPGet.Port); p.probe.HTTPGet.Path != p.path || port != 8081 {
					t.Errorf("%s probe is %s on port %s (%d), want %s on 8081", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), port, p.path)
				}
			}
			if portNumber(c, intstr.FromString("metrics")) != 8080 {
				t.Errorf("no container port named metrics on 8080: %+v", c.Ports)
			}
			for flag, port := range map[string]string{"--metrics-bind-address": ":8080", "--health-probe-bind-address": ":8081"} {
				for _, a := range c.Args {
					if v, ok := strings.CutPrefix(a, flag+"="); ok && v != port {
						t.Errorf("%s but the Deployment expects %s", a, port)
					}
				}
			}

			// POD_NAMESPACE: the default of --leader-elect-namespace; with
			// POD_NAME, the pod whose controller image is the default of
			// --tools-image, which the container must be named for.
			for name, path := range map[string]string{"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"} {
				found := false
				for _, e := range c.Env {
					if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == path {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s from the downward API (%s)", name, path)
				}
			}
			if c.Name != "controller" {
				t.Errorf("the container is named %q; --tools-image reads the image of the container named controller", c.Name)
			}

			// Requests, and a memory limit at least the request.
			req, lim := c.Resources.Requests, c.Resources.Limits
			if req.Cpu().IsZero() || req.Memory().IsZero() {
				t.Errorf("requests %v: want cpu and memory", req)
			}
			if lim.Memory().IsZero() || lim.Memory().Cmp(*req.Memory()) < 0 {
				t.Errorf("memory limit %v below request %v", lim.Memory(), req.Memory())
			}
			if want := resource.MustParse("256Mi"); lim.Memory().Cmp(want) != 0 {
				t.Errorf("memory limit %v, want %v", lim.Memory(), &want)
			}

			if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
				t.Error("automountServiceAccountToken must be true: the controller talks to the API with its token")
			}
			if spec.ServiceAccountName != controllerName {
				t.Errorf("serviceAccountName %q, want %q", spec.ServiceAccountName, controllerName)
			}

			checkSecurityContext(t, spec.SecurityContext, c.SecurityContext)

			// Replicas preferably on different nodes.
			spread := false
			if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
				for _, term := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
					sel := term.PodAffinityTerm.LabelSelector
					if term.PodAffinityTerm.TopologyKey == "kubernetes.io/hostname" && sel != nil &&
						labels.SelectorFromSet(sel.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
						spread = true
					}
				}
			}
			if !spread {
				t.Error("no preferred pod anti-affinity across nodes (kubernetes.io/hostname)")
			}
		})
	}
}

// checkSecurityContext checks the container's effective security context:
// its own settings, else the pod's.
func checkSecurityContext(t *testing.T, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	t.Helper()
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	if c == nil {
		t.Fatal("the container has no securityContext")
	}
	runAsNonRoot, runAsUser, seccomp := c.RunAsNonRoot, c.RunAsUser, c.SeccompProfile
	if runAsNonRoot == nil {
		runAsNonRoot = pod.RunAsNonRoot
	}
	if runAsUser == nil {
		runAsUser = pod.RunAsUser
	}
	if seccomp == nil {
		seccomp = pod.SeccompProfile
	}
	if runAsNonRoot == nil || !*runAsNonRoot {
		t.Error("runAsNonRoot is not true")
	}
	if runAsUser == nil || *runAsUser != nonRootUID {
		t.Errorf("runAsUser = %v, want %d (the image's USER)", runAsUser, nonRootUID)
	}
	if c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if c.Privileged != nil && *c.Privileged {
		t.Error("the container is privileged")
	}
	if c.Capabilities == nil || !slices.Contains(c.Capabilities.Drop, "ALL") || len(c.Capabilities.Add) > 0 {
		t.Errorf("capabilities %+v, want drop [ALL] and nothing added", c.Capabilities)
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccompProfile %+v, want RuntimeDefault", seccomp)
	}
}

// The image's USER is the runAsUser the Deployment asks for.
func TestImageUserMatchesDeployment(t *testing.T) {
	users := parseDockerfile(t).final().all("user")
	if len(users) == 0 {
		t.Fatal("the runtime stage has no USER")
	}
	uid, _, _ := strings.Cut(users[len(users)-1].Args[0], ":")
	if want := "65532"; uid != want {
		t.Errorf("the image runs as %s, the Deployment as %s", uid, want)
	}
}

func TestMetricsService(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			objs := render(t, v.dir)
			o, ok := find(objs, "Service", "database-controller-metrics")
			if !ok {
				t.Fatal("no Service database-controller-metrics")
			}
			var svc corev1.Service
			o.decode(t, &svc)
			d := deploymentOf(t, objs)
			c := controllerContainer(t, d)

			if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP {
				t.Errorf("type %s, want ClusterIP", svc.Spec.Type)
			}
			if svc.Namespace != d.Namespace {
				t.Errorf("Service in %q, Deployment in %q", svc.Namespace, d.Namespace)
			}
			if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				t.Errorf("selector %v does not select the controller pods %v", svc.Spec.Selector, d.Spec.Template.Labels)
			}
			if len(svc.Spec.Ports) != 1 {
				t.Fatalf("ports %+v, want one", svc.Spec.Ports)
			}
			p := svc.Spec.Ports[0]
			target := p.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(p.Port)
			}
			if p.Name != "metrics" || p.Port != 8080 || portNumber(c, target) != 8080 {
				t.Errorf("port %+v, want metrics 8080 to the container's metrics port", p)
			}
		})
	}
}

// checkDeletionProtection checks that the install holds the policy that
// refuses to delete a Database with spec.deletionProtection, and a binding
// that denies with it.
func checkDeletionProtection(t *testing.T, objs []object) {
	t.Helper()
	const name = "databases.dbcontroller.io-deletion-protection"
	o, ok := find(objs, "ValidatingAdmissionPolicy", name)
	if !ok {
		t.Fatal("the install lacks the deletion-protection ValidatingAdmissionPolicy")
	}
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	o.decode(t, &policy)
	rules := policy.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || !slices.Equal(rules[0].APIGroups, []string{"dbcontroller.io"}) ||
		!slices.Equal(rules[0].Resources, []string{"databases"}) ||
		len(rules[0].Operations) != 1 || rules[0].Operations[0] != admissionregistrationv1.Delete {
		t.Errorf("the policy matches %+v, want DELETE of databases in dbcontroller.io", rules)
	}
	if policy.Spec.FailurePolicy == nil || *policy.Spec.FailurePolicy != admissionregistrationv1.Fail || len(policy.Spec.Validations) != 1 ||
		!strings.Contains(policy.Spec.Validations[0].Expression, "oldObject.spec.deletionProtection") {
		t.Errorf("the policy: failurePolicy %v, validations %+v", policy.Spec.FailurePolicy, policy.Spec.Validations)
	}
	b, ok := find(objs, "ValidatingAdmissionPolicyBinding", name)
	if !ok {
		t.Fatal("the install lacks the deletion-protection ValidatingAdmissionPolicyBinding")
	}
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	b.decode(t, &binding)
	if binding.Spec.PolicyName != name || !slices.Equal(binding.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("the binding: %+v, want policy %s with Deny", binding.Spec, name)
	}
}

// What each install contains beyond the controller itself.
func TestInstallScope(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			objs := render(t, v.dir)
			d := deploymentOf(t, objs)
			c := controllerContainer(t, d)

			var nsArgs, nodeArgs []string
			for _, a := range c.Args {
				if a == "--namespace" || strings.HasPrefix(a, "--namespace=") || strings.HasPrefix(a, "-namespace") {
					nsArgs = append(nsArgs, a)
				}
				if strings.HasPrefix(strings.TrimLeft(a, "-"), "watch-nodes") {
					nodeArgs = append(nodeArgs, a)
				}
			}
			// Nodes are cluster-scoped: only the cluster-wide install may
			// watch them (the flag's default), and the namespaced one says
			// it does not, or the controller would fail to list them.
			if wantNodes := []string{"--watch-nodes=false"}; v.namespaced && !slices.Equal(nodeArgs, wantNodes) {
				t.Errorf("node args %q, want %q: the namespaced Role cannot grant nodes", nodeArgs, wantNodes)
			} else if !v.namespaced && len(nodeArgs) > 0 {
				t.Errorf("the cluster-wide install passes %q: it watches nodes, for drains", nodeArgs)
			}

			if !v.namespaced {
				if d.Namespace != controllerNamespace {
					t.Errorf("Deployment in %q, want %q", d.Namespace, controllerNamespace)
				}
				if len(nsArgs) > 0 {
					t.Errorf("the cluster-wide install passes %q: it must watch every namespace", nsArgs)
				}
				var crd apiextensionsv1.CustomResourceDefinition
				o, ok := find(objs, "CustomResourceDefinition", "databases.dbcontroller.io")
				if !ok {
					t.Fatal("the cluster-wide install lacks the CRD")
				}
				o.decode(t, &crd)
				if _, ok := find(objs, "CustomResourceDefinition", "databasebackups.dbcontroller.io"); !ok {
					t.Error("the cluster-wide install lacks the DatabaseBackup CRD")
				}
				checkDeletionProtection(t, objs)
				if _, ok := find(objs, "Namespace", controllerNamespace); !ok {
					t.Errorf("the cluster-wide install does not create namespace %s", controllerNamespace)
				}
				for _, o := range objs {
					switch o.Kind {
					case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
						"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
					default:
						if o.Namespace != controllerNamespace {
							t.Errorf("%s is not in %s", o, controllerNamespace)
						}
					}
				}
				return
			}

			// Namespaced: --namespace is the namespace the pod runs in (the
			// Role's namespace), and nothing is cluster-scoped. The kubelet
			// expands $(POD_NAMESPACE) from the container's env, which
			// TestDeployment checks comes from metadata.namespace.
			if len(nsArgs) != 1 || (nsArgs[0] != "--namespace=$(POD_NAMESPACE)" && nsArgs[0] != "--namespace="+d.Namespace) {
				t.Errorf("namespace args %q, want one --namespace=$(POD_NAMESPACE) (or --namespace=%s)", nsArgs, d.Namespace)
			}
			for _, o := range objs {
				switch o.Kind {
				case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
					t.Errorf("the namespaced install contains cluster-scoped %s", o)
				default:
					if o.Namespace != d.Namespace {
						t.Errorf("%s is not in the controller's namespace %q", o, d.Namespace)
					}
				}
			}
		})
	}
}

// Every manifest in artifacts/crd is in its kustomization, so that
// `kubectl apply -k artifacts/crd` installs each CRD and the policy.
func TestCRDKustomizationListsEveryManifest(t *testing.T) {
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "artifacts", "crd", "kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(repoPath(t, "artifacts", "crd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); !e.IsDir() && name != "kustomization.yaml" && filepath.Ext(name) == ".yaml" && !slices.Contains(k.Resources, name) {
			t.Errorf("artifacts/crd/kustomization.yaml does not list %s", name)
		}
	}
}
