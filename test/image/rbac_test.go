package image

import (
	"maps"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// grant is what one (API group, resource, resource names) is allowed.
type grant struct {
	Group, Resource string
	// Names is the rule's resourceNames, comma-joined; "" is every name.
	Names string
}

// permissions flattens rules into the verbs granted per group, resource and
// resource names, so that the same rights written as different rules
// compare equal.
func permissions(rules []rbacv1.PolicyRule) map[grant][]string {
	out := map[grant][]string{}
	for _, r := range rules {
		names := strings.Join(slices.Sorted(slices.Values(r.ResourceNames)), ",")
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				k := grant{Group: g, Resource: res, Names: names}
				out[k] = append(out[k], r.Verbs...)
			}
		}
	}
	for k, verbs := range out {
		slices.Sort(verbs)
		out[k] = slices.Compact(verbs)
	}
	return out
}

func verbs(v ...string) []string { return slices.Sorted(slices.Values(v)) }

// controllerPermissions is everything the controller does with the API
// (see controller.go); the ClusterRole and the namespaced Role grant exactly
// this.
var controllerPermissions = map[grant][]string{
	{Group: "dbcontroller.io", Resource: "databases"}:                  verbs("get", "list", "watch", "patch"),
	{Group: "dbcontroller.io", Resource: "databases/status"}:           verbs("patch"),
	{Group: "dbcontroller.io", Resource: "databases/finalizers"}:       verbs("update"),
	{Group: "dbcontroller.io", Resource: "databasebackups"}:            verbs("get", "list", "watch", "create", "delete", "patch"),
	{Group: "dbcontroller.io", Resource: "databasebackups/status"}:     verbs("update"),
	{Group: "dbcontroller.io", Resource: "databasebackups/finalizers"}: verbs("update"),
	{Group: "apps", Resource: "statefulsets"}:                          verbs("get", "list", "watch", "create", "patch"),
	{Group: "", Resource: "services"}:                                  verbs("get", "list", "watch", "create", "patch"),
	{Group: "", Resource: "secrets"}:                                   verbs("get", "list", "watch", "create", "patch"),
	{Group: "", Resource: "persistentvolumeclaims"}:                    verbs("get", "list", "watch", "create", "patch", "delete"),
	{Group: "", Resource: "pods"}:                                      verbs("get", "list", "watch", "patch", "delete"),
	{Group: "batch", Resource: "jobs"}:                                 verbs("get", "list", "watch", "create", "delete"),
	{Group: "", Resource: "events"}:                                    verbs("create", "patch", "list", "watch"),
	{Group: "policy", Resource: "poddisruptionbudgets"}:                verbs("get", "list", "watch", "create", "patch", "delete"),
	{Group: "", Resource: "configmaps"}:                                verbs("list", "watch"),
	// A monitored Database's PodMonitor, where the Prometheus Operator's
	// API is served.
	{Group: "monitoring.coreos.com", Resource: "podmonitors"}: verbs("get", "list", "watch", "create", "patch", "delete"),
}

// clusterPermissions are controllerPermissions and, cluster-scoped, the
// nodes, watched to see them cordoned (--watch-nodes): the ClusterRole
// grants these, the namespaced Role cannot.
var clusterPermissions = func() map[grant][]string {
	out := maps.Clone(controllerPermissions)
	out[grant{Group: "", Resource: "nodes"}] = verbs("get", "list", "watch")
	return out
}()

// leaderElectionPermissions: a Lease in the controller's namespace, named
// by --leader-elect-id (default database-controller).
var leaderElectionPermissions = map[grant][]string{
	{Group: "coordination.k8s.io", Resource: "leases"}:                               verbs("create"),
	{Group: "coordination.k8s.io", Resource: "leases", Names: "database-controller"}: verbs("get", "update"),
}

// role is a Role or ClusterRole, whichever the object is.
type role struct {
	obj   object
	rules []rbacv1.PolicyRule
}

func roles(t *testing.T, objs []object) []role {
	t.Helper()
	var out []role
	for _, o := range objs {
		switch o.Kind {
		case "Role":
			var r rbacv1.Role
			o.decode(t, &r)
			out = append(out, role{obj: o, rules: r.Rules})
		case "ClusterRole":
			var r rbacv1.ClusterRole
			o.decode(t, &r)
			if r.AggregationRule != nil {
				t.Errorf("%s aggregates other ClusterRoles: its rights would not be spelled out", o)
			}
			out = append(out, role{obj: o, rules: r.Rules})
		}
	}
	return out
}

// allRoles is every Role and ClusterRole: in each manifest file under
// artifacts/deploy (listed by a kustomization or not) and as rendered by
// both installs.
func allRoles(t *testing.T) []role {
	t.Helper()
	objs := manifestFiles(t, "deploy")
	for _, v := range variants {
		objs = append(objs, render(t, v.dir)...)
	}
	rs := roles(t, objs)
	if len(rs) == 0 {
		t.Fatal("no Role or ClusterRole found")
	}
	return rs
}

func TestRBACHasNoWildcards(t *testing.T) {
	for _, r := range allRoles(t) {
		for i, rule := range r.rules {
			for field, values := range map[string][]string{
				"apiGroups":       rule.APIGroups,
				"resources":       rule.Resources,
				"verbs":           rule.Verbs,
				"resourceNames":   rule.ResourceNames,
				"nonResourceURLs": rule.NonResourceURLs,
			} {
				for _, v := range values {
					if strings.Contains(v, "*") {
						t.Errorf("%s rule %d: %s contains %q", r.obj, i, field, v)
					}
				}
			}
			if len(rule.NonResourceURLs) > 0 {
				t.Errorf("%s rule %d grants non-resource URLs %q", r.obj, i, rule.NonResourceURLs)
			}
			if len(rule.Verbs) == 0 || len(rule.APIGroups) == 0 || len(rule.Resources) == 0 {
				t.Errorf("%s rule %d is incomplete: %+v", r.obj, i, rule)
			}
		}
	}
}

// Credentials Secrets are created once; their data is never rewritten and
// they are never deleted by the controller. A patch of their metadata
// adopts one that no one controls or releases one kept under Retain (the
// fixture tests in controller_test.go check each patch's content).
func TestRBACSecretsAreNeverRewrittenOrDeleted(t *testing.T) {
	allowed := []string{"get", "list", "watch", "create", "patch"}
	for _, r := range allRoles(t) {
		for g, vs := range permissions(r.rules) {
			if g.Group != "" || (g.Resource != "secrets" && !strings.HasPrefix(g.Resource, "secrets/")) {
				continue
			}
			for _, v := range vs {
				if !slices.Contains(allowed, v) {
					t.Errorf("%s grants %q on %s: credentials Secrets are created once, patched in their metadata only, and never rewritten or deleted by the controller", r.obj, v, g.Resource)
				}
			}
		}
	}
}

// Pods are read, to say why a replica is not ready; deleted only when they
// never ran (see pkg/reconcile/pods.go) or to restart a fenced former
// PostgreSQL primary as a replica; and patched for one thing, the role
// label of a replicated Database's pods (pkg/reconcile/replication.go),
// which RBAC cannot narrow to one label. Never created, updated or exec'd
// into: the StatefulSet controller manages them.
func TestRBACPodsAreReadAndDeletedOnly(t *testing.T) {
	for _, r := range allRoles(t) {
		for g, vs := range permissions(r.rules) {
			if g.Resource != "pods" && !strings.HasPrefix(g.Resource, "pods/") {
				continue
			}
			if g.Group != "" || g.Resource != "pods" || !slices.Equal(vs, verbs("get", "list", "watch", "patch", "delete")) {
				t.Errorf("%s grants %v on %s in group %q: the controller only reads pods, labels their role and deletes some", r.obj, vs, g.Resource, g.Group)
			}
		}
	}
}

// Status is written through the status subresource only. On a Database
// itself the controller may patch, for its finalizer (a JSON patch of
// /metadata/finalizers alone, see pkg/reconcile/deletion.go); RBAC cannot
// narrow a patch to one field, so this is the least it can grant. It may
// never update (replace) or delete one.
func TestRBACDatabaseStatusOnlyThroughSubresource(t *testing.T) {
	statusWriters := 0
	for _, r := range allRoles(t) {
		for g, vs := range permissions(r.rules) {
			if g.Group != "dbcontroller.io" {
				continue
			}
			switch g.Resource {
			case "databases":
				for _, v := range vs {
					if !slices.Contains([]string{"get", "list", "watch", "patch"}, v) {
						t.Errorf("%s grants %q on databases itself; write status through databases/status, the finalizer with a patch", r.obj, v)
					}
				}
			case "databases/status":
				// ApplyStatus (server-side apply) is a patch.
				if slices.Contains(vs, "patch") {
					statusWriters++
				}
			}
		}
	}
	if statusWriters == 0 {
		t.Error("no role grants patch on databases/status: the controller could not apply status")
	}
}

func TestRBACExactPermissions(t *testing.T) {
	// The source files.
	cases := map[string]map[grant][]string{
		"ClusterRole database-controller":          clusterPermissions,
		"Role database-controller":                 controllerPermissions,
		"Role database-controller-leader-election": leaderElectionPermissions,
	}
	seen := map[string]bool{}
	for _, r := range roles(t, manifestFiles(t, "deploy")) {
		key := r.obj.Kind + " " + r.obj.Name
		want, ok := cases[key]
		if !ok {
			t.Errorf("unexpected %s: add its permissions to this test", r.obj)
			continue
		}
		seen[key] = true
		if got := permissions(r.rules); !maps.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s grants\n  %v\nwant exactly\n  %v", r.obj, got, want)
		}
	}
	for key := range cases {
		if !seen[key] {
			t.Errorf("no %s under artifacts/deploy", key)
		}
	}

	// The installs.
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			objs := render(t, v.dir)
			want := map[string]map[grant][]string{
				"Role database-controller-leader-election": leaderElectionPermissions,
			}
			if v.namespaced {
				want["Role database-controller"] = controllerPermissions
			} else {
				want["ClusterRole database-controller"] = clusterPermissions
			}
			got := map[string]map[grant][]string{}
			for _, r := range roles(t, objs) {
				got[r.obj.Kind+" "+r.obj.Name] = permissions(r.rules)
			}
			if !maps.EqualFunc(got, want, func(a, b map[grant][]string) bool { return maps.EqualFunc(a, b, slices.Equal) }) {
				t.Errorf("roles rendered:\n  %v\nwant:\n  %v", got, want)
			}
		})
	}
}

// Each install binds its roles, and only its own roles, to the
// controller's ServiceAccount in the namespace the Deployment runs in.
func TestRBACBindings(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			objs := render(t, v.dir)
			dep := deploymentOf(t, objs)
			sa := dep.Spec.Template.Spec.ServiceAccountName
			if _, ok := find(objs, "ServiceAccount", sa); !ok {
				t.Errorf("the Deployment runs as ServiceAccount %q, which the install does not create", sa)
			}
			wantSubject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: dep.Namespace}

			type binding struct {
				obj      object
				roleRef  rbacv1.RoleRef
				subjects []rbacv1.Subject
			}
			var bindings []binding
			for _, o := range objs {
				switch o.Kind {
				case "RoleBinding":
					var b rbacv1.RoleBinding
					o.decode(t, &b)
					bindings = append(bindings, binding{o, b.RoleRef, b.Subjects})
				case "ClusterRoleBinding":
					var b rbacv1.ClusterRoleBinding
					o.decode(t, &b)
					bindings = append(bindings, binding{o, b.RoleRef, b.Subjects})
				}
			}

			bound := map[string]bool{}
			for _, b := range bindings {
				if b.obj.Kind == "RoleBinding" && b.obj.Namespace != dep.Namespace {
					t.Errorf("%s is not in the controller's namespace %q", b.obj, dep.Namespace)
				}
				if b.obj.Kind == "ClusterRoleBinding" && b.roleRef.Kind != "ClusterRole" {
					t.Errorf("%s refers to a %s", b.obj, b.roleRef.Kind)
				}
				// Only roles of this install: no built-in role such as
				// cluster-admin or edit.
				r, ok := find(objs, b.roleRef.Kind, b.roleRef.Name)
				if !ok || b.roleRef.APIGroup != rbacv1.GroupName {
					t.Errorf("%s refers to %s %q, which the install does not define", b.obj, b.roleRef.Kind, b.roleRef.Name)
					continue
				}
				if r.Kind == "Role" && r.Namespace != b.obj.Namespace {
					t.Errorf("%s refers to %s in another namespace", b.obj, r)
				}
				if !slices.Equal(b.subjects, []rbacv1.Subject{wantSubject}) {
					t.Errorf("%s binds %+v, want only %+v", b.obj, b.subjects, wantSubject)
				}
				bound[r.Kind+" "+r.Name] = true
			}
			for _, r := range roles(t, objs) {
				if !bound[r.obj.Kind+" "+r.obj.Name] {
					t.Errorf("%s is bound to nothing", r.obj)
				}
			}
			if v.namespaced && len(ofKind(objs, "ClusterRoleBinding")) > 0 {
				t.Error("the namespaced install has a ClusterRoleBinding")
			}
		})
	}
}

// The deletion-protection policy is the cluster admin's: the controller
// can neither change nor remove it.
func TestRBACCannotTouchDeletionProtection(t *testing.T) {
	for _, r := range allRoles(t) {
		for g, vs := range permissions(r.rules) {
			if g.Group == "admissionregistration.k8s.io" {
				t.Errorf("%s grants %v on %s.%s: the deletion-protection policy is the cluster admin's", r.obj, vs, g.Resource, g.Group)
			}
		}
	}
}
