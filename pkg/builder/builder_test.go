package builder

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
)

const (
	testName      = "orders"
	testNamespace = "default"
	testUID       = types.UID("0f4c6a2e-9b1d-4e57-8c3a-2d6f1b7e9a10")
	testPassword  = "s3cretPW"
)

// engineCase holds, spelled out literally, what the builders must produce
// for one engine, so that a change in a profile shows up as a failure here.
type engineCase struct {
	engine       dbv1alpha1.Engine
	version      string
	catalogImage string
	port         int32
	portName     string
	env          []corev1.EnvVar
	dataPath     string
	scratchPaths []string
	readiness    []string
	// probeTimeout and startupFailures: the probes' timeout, and how many
	// 10 s startup probes may fail before the container is restarted.
	probeTimeout, startupFailures int32
	username                      string
	uri                           string
}

// podIPEnv is the pod's own address, which the probes log in through.
var podIPEnv = corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
	FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}

func secretEnv(name, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: testName + "-credentials"},
			Key:                  key,
		},
	}}
}

var engineCases = []engineCase{
	{
		engine:       dbv1alpha1.EnginePostgreSQL,
		version:      "16",
		catalogImage: "postgres:16",
		port:         5432,
		portName:     "postgresql",
		env: []corev1.EnvVar{
			secretEnv("POSTGRES_USER", "username"),
			secretEnv("POSTGRES_PASSWORD", "password"),
			secretEnv("POSTGRES_DB", "database"),
			{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"},
			podIPEnv,
		},
		dataPath:     "/var/lib/postgresql/data",
		scratchPaths: []string{"/var/run/postgresql", "/tmp"},
		readiness: []string{"sh", "-c",
			`out=$(PGPASSWORD="$POSTGRES_PASSWORD" PGCONNECT_TIMEOUT=3 psql -X -w -h "$POD_IP" -p 5432 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -tAc 'SELECT 1' 2>&1) && exit 0
case "$out" in *"password authentication failed"*) exit 0;; esac
echo "$out"; exit 1`},
		probeTimeout: 5, startupFailures: 30,
		username: "postgres",
		uri:      "postgresql://postgres:" + testPassword + "@orders.default.svc:5432/orders",
	},
	{
		engine:       dbv1alpha1.EngineMySQL,
		version:      "8.4",
		catalogImage: "mysql:8.4",
		port:         3306,
		portName:     "mysql",
		env: []corev1.EnvVar{
			secretEnv("MYSQL_ROOT_PASSWORD", "password"),
			secretEnv("MYSQL_DATABASE", "database"),
			podIPEnv,
		},
		dataPath:     "/var/lib/mysql",
		scratchPaths: []string{"/var/run/mysqld", "/tmp"},
		readiness: []string{"sh", "-c",
			`tls=
if [ -f /etc/dbc-tls/tls.crt ] && command -v mariadbd >/dev/null 2>&1; then tls="--ssl --skip-ssl-verify-server-cert"; fi
out=$(MYSQL_PWD="$MYSQL_ROOT_PASSWORD" "$(command -v mysql || command -v mariadb)" --protocol=TCP -h "$POD_IP" -P 3306 -uroot $tls --connect-timeout=3 -D "$MYSQL_DATABASE" -Nse 'SELECT 1' 2>&1) && exit 0
case "$out" in *"ERROR 1045 "*) exit 0;; esac
echo "$out"; exit 1`},
		probeTimeout: 5, startupFailures: 90,
		username: "root",
		uri:      "mysql://root:" + testPassword + "@orders.default.svc:3306/orders",
	},
	{
		engine:       dbv1alpha1.EngineMongoDB,
		version:      "7.0",
		catalogImage: "mongo:7.0",
		port:         27017,
		portName:     "mongodb",
		env: []corev1.EnvVar{
			secretEnv("MONGO_INITDB_ROOT_USERNAME", "username"),
			secretEnv("MONGO_INITDB_ROOT_PASSWORD", "password"),
			secretEnv("MONGO_INITDB_DATABASE", "database"),
		},
		dataPath:     "/data/db",
		scratchPaths: []string{"/data/configdb", "/tmp"},
		readiness: []string{"sh", "-c",
			`tls=; [ ! -f /etc/dbc-tls/ca.crt ] || tls="--tls --tlsCAFile /etc/dbc-tls/ca.crt --tlsAllowInvalidHostnames"
HOME=/tmp exec mongosh --quiet --norc $tls -u "$MONGO_INITDB_ROOT_USERNAME" -p "$MONGO_INITDB_ROOT_PASSWORD" --authenticationDatabase admin --eval 'db.adminCommand({ping: 1}).ok' mongodb://127.0.0.1:27017/admin`},
		probeTimeout: 10, startupFailures: 60,
		username: "root",
		uri:      "mongodb://root:" + testPassword + "@orders.default.svc:27017/orders?authSource=admin",
	},
}

func newDatabase(e dbv1alpha1.Engine, version string) *dbv1alpha1.Database {
	return &dbv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: testName, Namespace: testNamespace, UID: testUID, Generation: 3},
		Spec: dbv1alpha1.DatabaseSpec{
			Engine:  e,
			Version: version,
			Storage: dbv1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
		},
	}
}

func lookup(t *testing.T, e dbv1alpha1.Engine) engine.Engine {
	t.Helper()
	p, err := registry.Lookup(string(e))
	if err != nil {
		t.Fatalf("registry.Lookup(%q): %v", e, err)
	}
	return p
}

func wantLabels(e dbv1alpha1.Engine) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       string(e),
		"app.kubernetes.io/instance":   testName,
		"app.kubernetes.io/managed-by": "database-controller",
	}
}

func wantSelectorLabels(e dbv1alpha1.Engine) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     string(e),
		"app.kubernetes.io/instance": testName,
	}
}

var wantOwnerReferences = []metav1.OwnerReference{{
	APIVersion:         "dbcontroller.io/v1alpha1",
	Kind:               "Database",
	Name:               testName,
	UID:                testUID,
	Controller:         ptr.To(true),
	BlockOwnerDeletion: ptr.To(true),
}}

// buildStatefulSet builds the StatefulSet of db and converts it to a typed object.
func buildStatefulSet(t *testing.T, db *dbv1alpha1.Database, p engine.Engine, image string, storage Storage) *appsv1.StatefulSet {
	t.Helper()
	var sts appsv1.StatefulSet
	if err := Convert(NewStatefulSet(db, p, image, storage, nil, false), &sts); err != nil {
		t.Fatalf("Convert(StatefulSet): %v", err)
	}
	return &sts
}

func onlyContainer(t *testing.T, sts *appsv1.StatefulSet) corev1.Container {
	t.Helper()
	if n := len(sts.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("StatefulSet has %d containers, want 1", n)
	}
	return sts.Spec.Template.Spec.Containers[0]
}

func onlyClaimTemplate(t *testing.T, sts *appsv1.StatefulSet) corev1.PersistentVolumeClaim {
	t.Helper()
	if n := len(sts.Spec.VolumeClaimTemplates); n != 1 {
		t.Fatalf("StatefulSet has %d volumeClaimTemplates, want 1", n)
	}
	return sts.Spec.VolumeClaimTemplates[0]
}

// equalResourceList compares two resource lists key by key, by the canonical
// string of each quantity.
func equalResourceList(got, want corev1.ResourceList) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || g.String() != w.String() {
			return false
		}
	}
	return true
}

func TestNewStatefulSet(t *testing.T) {
	for _, tc := range engineCases {
		t.Run(string(tc.engine), func(t *testing.T) {
			db := newDatabase(tc.engine, tc.version)
			p := lookup(t, tc.engine)
			image, err := p.Image(db.Spec.Version, db.Spec.Image)
			if err != nil {
				t.Fatalf("Image(): %v", err)
			}
			if image != tc.catalogImage {
				t.Fatalf("Image() = %q, want %q", image, tc.catalogImage)
			}
			sts := buildStatefulSet(t, db, p, image, StorageOf(db))

			if sts.Kind != "StatefulSet" || sts.APIVersion != "apps/v1" {
				t.Errorf("TypeMeta = %s %s, want apps/v1 StatefulSet", sts.APIVersion, sts.Kind)
			}
			if sts.Name != testName || sts.Namespace != testNamespace {
				t.Errorf("name = %s/%s, want %s/%s", sts.Namespace, sts.Name, testNamespace, testName)
			}
			if !reflect.DeepEqual(sts.Labels, wantLabels(tc.engine)) {
				t.Errorf("labels = %v, want %v", sts.Labels, wantLabels(tc.engine))
			}
			if !reflect.DeepEqual(sts.OwnerReferences, wantOwnerReferences) {
				t.Errorf("ownerReferences = %+v, want %+v", sts.OwnerReferences, wantOwnerReferences)
			}

			spec := sts.Spec
			if spec.Replicas == nil || *spec.Replicas != 1 {
				t.Errorf("replicas = %v, want 1 (spec.replicas unset)", spec.Replicas)
			}
			if spec.ServiceName != testName+"-headless" {
				t.Errorf("serviceName = %q, want %q", spec.ServiceName, testName+"-headless")
			}
			wantSelector := &metav1.LabelSelector{MatchLabels: wantSelectorLabels(tc.engine)}
			if !reflect.DeepEqual(spec.Selector, wantSelector) {
				t.Errorf("selector = %+v, want %+v", spec.Selector, wantSelector)
			}
			if spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement {
				t.Errorf("podManagementPolicy = %q, want OrderedReady", spec.PodManagementPolicy)
			}
			wantStrategy := appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
			if !reflect.DeepEqual(spec.UpdateStrategy, wantStrategy) {
				t.Errorf("updateStrategy = %+v, want %+v", spec.UpdateStrategy, wantStrategy)
			}
			wantRetention := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			}
			if !reflect.DeepEqual(spec.PersistentVolumeClaimRetentionPolicy, wantRetention) {
				t.Errorf("persistentVolumeClaimRetentionPolicy = %+v, want %+v", spec.PersistentVolumeClaimRetentionPolicy, wantRetention)
			}

			// Pod template.
			tmpl := spec.Template
			if !reflect.DeepEqual(tmpl.Labels, wantLabels(tc.engine)) {
				t.Errorf("pod labels = %v, want %v", tmpl.Labels, wantLabels(tc.engine))
			}
			for k, v := range spec.Selector.MatchLabels {
				if tmpl.Labels[k] != v {
					t.Errorf("pod label %s = %q, selector wants %q", k, tmpl.Labels[k], v)
				}
			}
			pod := tmpl.Spec
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
				t.Errorf("automountServiceAccountToken = %v, want false", pod.AutomountServiceAccountToken)
			}
			if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
				t.Errorf("enableServiceLinks = %v, want false", pod.EnableServiceLinks)
			}
			fsPolicy := corev1.FSGroupChangeOnRootMismatch
			wantPodSC := &corev1.PodSecurityContext{
				RunAsNonRoot:        ptr.To(true),
				RunAsUser:           ptr.To[int64](999),
				RunAsGroup:          ptr.To[int64](999),
				FSGroup:             ptr.To[int64](999),
				FSGroupChangePolicy: &fsPolicy,
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			}
			if !reflect.DeepEqual(pod.SecurityContext, wantPodSC) {
				t.Errorf("pod securityContext = %+v, want %+v", pod.SecurityContext, wantPodSC)
			}
			var wantVolumes []corev1.Volume
			wantMounts := []corev1.VolumeMount{{Name: "data", MountPath: tc.dataPath}}
			for i, path := range tc.scratchPaths {
				name := "scratch-" + strconv.Itoa(i)
				wantVolumes = append(wantVolumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
				wantMounts = append(wantMounts, corev1.VolumeMount{Name: name, MountPath: path})
			}
			if !reflect.DeepEqual(pod.Volumes, wantVolumes) {
				t.Errorf("volumes = %+v, want %+v", pod.Volumes, wantVolumes)
			}

			// Container.
			c := onlyContainer(t, sts)
			if c.Name != string(tc.engine) {
				t.Errorf("container name = %q, want %q", c.Name, tc.engine)
			}
			if c.Image != tc.catalogImage {
				t.Errorf("image = %q, want %q", c.Image, tc.catalogImage)
			}
			if c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("imagePullPolicy = %q, want IfNotPresent", c.ImagePullPolicy)
			}
			wantPorts := []corev1.ContainerPort{{Name: tc.portName, ContainerPort: tc.port, Protocol: corev1.ProtocolTCP}}
			if !reflect.DeepEqual(c.Ports, wantPorts) {
				t.Errorf("ports = %+v, want %+v", c.Ports, wantPorts)
			}
			if !reflect.DeepEqual(c.Env, tc.env) {
				t.Errorf("env = %+v, want %+v", c.Env, tc.env)
			}
			if !reflect.DeepEqual(c.VolumeMounts, wantMounts) {
				t.Errorf("volumeMounts = %+v, want %+v", c.VolumeMounts, wantMounts)
			}
			mounted := map[string]bool{"data": true}
			for _, v := range pod.Volumes {
				mounted[v.Name] = true
			}
			for _, m := range c.VolumeMounts {
				if !mounted[m.Name] {
					t.Errorf("volumeMount %q has no volume or claim template", m.Name)
				}
			}
			wantStartup := &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: tc.readiness}},
				PeriodSeconds:    10,
				TimeoutSeconds:   tc.probeTimeout,
				SuccessThreshold: 1,
				FailureThreshold: tc.startupFailures,
			}
			if !reflect.DeepEqual(c.StartupProbe, wantStartup) {
				t.Errorf("startupProbe = %+v, want %+v", c.StartupProbe, wantStartup)
			}
			wantReadiness := &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: tc.readiness}},
				PeriodSeconds:    10,
				TimeoutSeconds:   tc.probeTimeout,
				SuccessThreshold: 1,
				FailureThreshold: 3,
			}
			if !reflect.DeepEqual(c.ReadinessProbe, wantReadiness) {
				t.Errorf("readinessProbe = %+v, want %+v", c.ReadinessProbe, wantReadiness)
			}
			wantLiveness := &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(tc.portName)}},
				PeriodSeconds:    10,
				TimeoutSeconds:   5,
				SuccessThreshold: 1,
				FailureThreshold: 6,
			}
			if !reflect.DeepEqual(c.LivenessProbe, wantLiveness) {
				t.Errorf("livenessProbe = %+v, want %+v", c.LivenessProbe, wantLiveness)
			}
			wantSC := &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				RunAsNonRoot:             ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}
			if !reflect.DeepEqual(c.SecurityContext, wantSC) {
				t.Errorf("container securityContext = %+v, want %+v", c.SecurityContext, wantSC)
			}
			if !reflect.DeepEqual(c.Resources, corev1.ResourceRequirements{}) {
				t.Errorf("resources = %+v, want none (spec.resources unset)", c.Resources)
			}

			// Claim template.
			pvc := onlyClaimTemplate(t, sts)
			if pvc.Name != "data" {
				t.Errorf("claim template name = %q, want data", pvc.Name)
			}
			if !reflect.DeepEqual(pvc.Labels, wantLabels(tc.engine)) {
				t.Errorf("claim template labels = %v, want %v", pvc.Labels, wantLabels(tc.engine))
			}
			if !reflect.DeepEqual(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
				t.Errorf("accessModes = %v, want [ReadWriteOnce]", pvc.Spec.AccessModes)
			}
			if want := (corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}); !equalResourceList(pvc.Spec.Resources.Requests, want) {
				t.Errorf("claim requests = %v, want %v", pvc.Spec.Resources.Requests, want)
			}
			if pvc.Spec.Resources.Limits != nil {
				t.Errorf("claim limits = %v, want none", pvc.Spec.Resources.Limits)
			}
			if pvc.Spec.StorageClassName != nil {
				t.Errorf("storageClassName = %q, want unset", *pvc.Spec.StorageClassName)
			}
		})
	}
}

func TestNewStatefulSetImage(t *testing.T) {
	const mirror = "registry.example.com/mirror/db:custom"
	for _, tc := range engineCases {
		tests := []struct {
			name     string
			version  string
			override string
			want     string
		}{
			{name: "catalog", version: tc.version, want: tc.catalogImage},
			{name: "override", version: tc.version, override: mirror, want: mirror},
			{name: "override of an uncatalogued version", version: "99.1", override: mirror, want: mirror},
		}
		for _, tt := range tests {
			t.Run(string(tc.engine)+"/"+tt.name, func(t *testing.T) {
				db := newDatabase(tc.engine, tt.version)
				db.Spec.Image = tt.override
				p := lookup(t, tc.engine)
				image, err := p.Image(db.Spec.Version, db.Spec.Image)
				if err != nil {
					t.Fatalf("Image(): %v", err)
				}
				c := onlyContainer(t, buildStatefulSet(t, db, p, image, StorageOf(db)))
				if c.Image != tt.want {
					t.Errorf("image = %q, want %q", c.Image, tt.want)
				}
			})
		}
	}
}

func TestNewStatefulSetReplicas(t *testing.T) {
	tests := []struct {
		name     string
		replicas *int32
		want     int32
	}{
		{name: "unset defaults to 1", replicas: nil, want: 1},
		{name: "zero stops", replicas: ptr.To[int32](0), want: 0},
		{name: "one", replicas: ptr.To[int32](1), want: 1},
		{name: "three", replicas: ptr.To[int32](3), want: 3},
	}
	for _, tc := range engineCases {
		for _, tt := range tests {
			t.Run(string(tc.engine)+"/"+tt.name, func(t *testing.T) {
				db := newDatabase(tc.engine, tc.version)
				db.Spec.Replicas = tt.replicas
				sts := buildStatefulSet(t, db, lookup(t, tc.engine), tc.catalogImage, StorageOf(db))
				if sts.Spec.Replicas == nil {
					t.Fatalf("replicas unset, want %d", tt.want)
				}
				if *sts.Spec.Replicas != tt.want {
					t.Errorf("replicas = %d, want %d", *sts.Spec.Replicas, tt.want)
				}
			})
		}
	}
}

func TestNewStatefulSetRetentionPolicy(t *testing.T) {
	tests := []struct {
		policy      dbv1alpha1.DeletionPolicy
		whenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType
	}{
		{policy: "", whenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
		{policy: dbv1alpha1.DeletionPolicyRetain, whenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
		{policy: dbv1alpha1.DeletionPolicyDelete, whenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType},
	}
	for _, tc := range engineCases {
		for _, tt := range tests {
			t.Run(string(tc.engine)+"/"+string(tt.policy), func(t *testing.T) {
				db := newDatabase(tc.engine, tc.version)
				db.Spec.DeletionPolicy = tt.policy
				sts := buildStatefulSet(t, db, lookup(t, tc.engine), tc.catalogImage, StorageOf(db))
				want := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: tt.whenDeleted,
					WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				}
				if !reflect.DeepEqual(sts.Spec.PersistentVolumeClaimRetentionPolicy, want) {
					t.Errorf("persistentVolumeClaimRetentionPolicy = %+v, want %+v", sts.Spec.PersistentVolumeClaimRetentionPolicy, want)
				}
			})
		}
	}
}

func TestNewStatefulSetStorage(t *testing.T) {
	tests := []struct {
		name      string
		storage   Storage
		wantSize  string
		wantClass *string
	}{
		{name: "default class", storage: Storage{Size: resource.MustParse("1Gi")}, wantSize: "1Gi"},
		{name: "explicit class", storage: Storage{Size: resource.MustParse("20Gi"), StorageClassName: ptr.To("fast-ssd")}, wantSize: "20Gi", wantClass: ptr.To("fast-ssd")},
		{name: "decimal size", storage: Storage{Size: resource.MustParse("500M")}, wantSize: "500M"},
	}
	for _, tc := range engineCases {
		for _, tt := range tests {
			t.Run(string(tc.engine)+"/"+tt.name, func(t *testing.T) {
				db := newDatabase(tc.engine, tc.version)
				pvc := onlyClaimTemplate(t, buildStatefulSet(t, db, lookup(t, tc.engine), tc.catalogImage, tt.storage))
				if pvc.Name != "data" {
					t.Errorf("claim template name = %q, want data", pvc.Name)
				}
				if !reflect.DeepEqual(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
					t.Errorf("accessModes = %v, want [ReadWriteOnce]", pvc.Spec.AccessModes)
				}
				got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
				if got.String() != tt.wantSize || len(pvc.Spec.Resources.Requests) != 1 {
					t.Errorf("claim requests = %v, want storage=%s only", pvc.Spec.Resources.Requests, tt.wantSize)
				}
				if !reflect.DeepEqual(pvc.Spec.StorageClassName, tt.wantClass) {
					t.Errorf("storageClassName = %v, want %v", ptr.Deref(pvc.Spec.StorageClassName, "<unset>"), ptr.Deref(tt.wantClass, "<unset>"))
				}
			})
		}
	}
}

// TestNewStatefulSetStorageFromSpec checks that StorageOf carries the
// Database's storage spec into the claim template.
func TestNewStatefulSetStorageFromSpec(t *testing.T) {
	for _, tc := range engineCases {
		t.Run(string(tc.engine), func(t *testing.T) {
			db := newDatabase(tc.engine, tc.version)
			db.Spec.Storage = dbv1alpha1.StorageSpec{Size: resource.MustParse("5Gi"), StorageClassName: ptr.To("standard")}
			pvc := onlyClaimTemplate(t, buildStatefulSet(t, db, lookup(t, tc.engine), tc.catalogImage, StorageOf(db)))
			got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			if got.String() != "5Gi" {
				t.Errorf("storage request = %s, want 5Gi", got.String())
			}
			if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "standard" {
				t.Errorf("storageClassName = %v, want standard", ptr.Deref(pvc.Spec.StorageClassName, "<unset>"))
			}
		})
	}
}

func TestNewStatefulSetResources(t *testing.T) {
	requests := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("250m"),
		corev1.ResourceMemory: resource.MustParse("512Mi"),
	}
	limits := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
	}
	tests := []struct {
		name         string
		resources    *corev1.ResourceRequirements
		wantRequests corev1.ResourceList
		wantLimits   corev1.ResourceList
	}{
		{name: "unset"},
		{name: "empty", resources: &corev1.ResourceRequirements{}},
		{name: "empty maps", resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}},
		{name: "requests only", resources: &corev1.ResourceRequirements{Requests: requests}, wantRequests: requests},
		{name: "limits only", resources: &corev1.ResourceRequirements{Limits: limits}, wantLimits: limits},
		{name: "both", resources: &corev1.ResourceRequirements{Requests: requests, Limits: limits}, wantRequests: requests, wantLimits: limits},
	}
	for _, tc := range engineCases {
		for _, tt := range tests {
			t.Run(string(tc.engine)+"/"+tt.name, func(t *testing.T) {
				db := newDatabase(tc.engine, tc.version)
				db.Spec.Resources = tt.resources
				c := onlyContainer(t, buildStatefulSet(t, db, lookup(t, tc.engine), tc.catalogImage, StorageOf(db)))
				if (c.Resources.Requests == nil) != (tt.wantRequests == nil) || !equalResourceList(c.Resources.Requests, tt.wantRequests) {
					t.Errorf("requests = %v, want %v", c.Resources.Requests, tt.wantRequests)
				}
				if (c.Resources.Limits == nil) != (tt.wantLimits == nil) || !equalResourceList(c.Resources.Limits, tt.wantLimits) {
					t.Errorf("limits = %v, want %v", c.Resources.Limits, tt.wantLimits)
				}
				if c.Resources.Claims != nil {
					t.Errorf("claims = %v, want none", c.Resources.Claims)
				}
			})
		}
	}
}

func TestNewSecret(t *testing.T) {
	for _, tc := range engineCases {
		t.Run(string(tc.engine), func(t *testing.T) {
			db := newDatabase(tc.engine, tc.version)
			var secret corev1.Secret
			if err := Convert(NewSecret(db, lookup(t, tc.engine), testPassword), &secret); err != nil {
				t.Fatalf("Convert(Secret): %v", err)
			}
			if secret.Kind != "Secret" || secret.APIVersion != "v1" {
				t.Errorf("TypeMeta = %s %s, want v1 Secret", secret.APIVersion, secret.Kind)
			}
			if secret.Name != "orders-credentials" || secret.Namespace != testNamespace {
				t.Errorf("name = %s/%s, want %s/orders-credentials", secret.Namespace, secret.Name, testNamespace)
			}
			if secret.Type != corev1.SecretTypeOpaque {
				t.Errorf("type = %q, want Opaque", secret.Type)
			}
			if !reflect.DeepEqual(secret.Labels, wantLabels(tc.engine)) {
				t.Errorf("labels = %v, want %v", secret.Labels, wantLabels(tc.engine))
			}
			if !reflect.DeepEqual(secret.OwnerReferences, wantOwnerReferences) {
				t.Errorf("ownerReferences = %+v, want %+v", secret.OwnerReferences, wantOwnerReferences)
			}
			want := map[string]string{
				"username": tc.username,
				"password": testPassword,
				"database": "orders",
				"host":     "orders.default.svc",
				"port":     strconv.Itoa(int(tc.port)),
				"uri":      tc.uri,
			}
			if tc.engine != dbv1alpha1.EngineMongoDB {
				// The read-only Service's, which a replicated Database has.
				want["ro-host"] = "orders-ro.default.svc"
				want["ro-uri"] = strings.Replace(tc.uri, "@orders.default.svc", "@orders-ro.default.svc", 1)
			}
			if got := stringData(secret.Data); !reflect.DeepEqual(got, want) {
				t.Errorf("data = %q, want %q", got, want)
			}
			if secret.StringData != nil {
				t.Errorf("stringData = %v, want none", secret.StringData)
			}
		})
	}
}

func stringData(data map[string][]byte) map[string]string {
	out := make(map[string]string, len(data))
	for k, v := range data {
		out[k] = string(v)
	}
	return out
}

// TestNewSecretDashedName checks that dashes in the Database's name become
// underscores in the database name, and only there.
func TestNewSecretDashedName(t *testing.T) {
	tests := []struct {
		engine   dbv1alpha1.Engine
		wantURI  string
		wantUser string
		wantPort string
	}{
		{dbv1alpha1.EnginePostgreSQL, "postgresql://postgres:pw@order-history-v2.shop.svc:5432/order_history_v2", "postgres", "5432"},
		{dbv1alpha1.EngineMySQL, "mysql://root:pw@order-history-v2.shop.svc:3306/order_history_v2", "root", "3306"},
		{dbv1alpha1.EngineMongoDB, "mongodb://root:pw@order-history-v2.shop.svc:27017/order_history_v2?authSource=admin", "root", "27017"},
	}
	for _, tt := range tests {
		t.Run(string(tt.engine), func(t *testing.T) {
			db := &dbv1alpha1.Database{
				ObjectMeta: metav1.ObjectMeta{Name: "order-history-v2", Namespace: "shop", UID: testUID},
				Spec:       dbv1alpha1.DatabaseSpec{Engine: tt.engine},
			}
			var secret corev1.Secret
			if err := Convert(NewSecret(db, lookup(t, tt.engine), "pw"), &secret); err != nil {
				t.Fatalf("Convert(Secret): %v", err)
			}
			if secret.Name != "order-history-v2-credentials" || secret.Namespace != "shop" {
				t.Errorf("name = %s/%s, want shop/order-history-v2-credentials", secret.Namespace, secret.Name)
			}
			want := map[string]string{
				"username": tt.wantUser,
				"password": "pw",
				"database": "order_history_v2",
				"host":     "order-history-v2.shop.svc",
				"port":     tt.wantPort,
				"uri":      tt.wantURI,
			}
			if tt.engine != dbv1alpha1.EngineMongoDB {
				want["ro-host"] = "order-history-v2-ro.shop.svc"
				want["ro-uri"] = strings.Replace(tt.wantURI, "@order-history-v2.shop.svc", "@order-history-v2-ro.shop.svc", 1)
			}
			if got := stringData(secret.Data); !reflect.DeepEqual(got, want) {
				t.Errorf("data = %q, want %q", got, want)
			}
			if secret.Labels["app.kubernetes.io/instance"] != "order-history-v2" {
				t.Errorf("instance label = %q, want order-history-v2", secret.Labels["app.kubernetes.io/instance"])
			}
		})
	}
}

func TestServices(t *testing.T) {
	for _, tc := range engineCases {
		p := lookup(t, tc.engine)
		wantPorts := []corev1.ServicePort{{
			Name:       tc.portName,
			Protocol:   corev1.ProtocolTCP,
			Port:       tc.port,
			TargetPort: intstr.FromString(tc.portName),
		}}
		tests := []struct {
			name                string
			build               func(*dbv1alpha1.Database, engine.Engine) any
			wantName            string
			wantType            corev1.ServiceType
			wantClusterIP       string
			wantPublishNotReady bool
		}{
			{
				name:                "headless",
				build:               func(db *dbv1alpha1.Database, p engine.Engine) any { return NewHeadlessService(db, p) },
				wantName:            "orders-headless",
				wantClusterIP:       corev1.ClusterIPNone,
				wantPublishNotReady: true,
			},
			{
				name:     "client",
				build:    func(db *dbv1alpha1.Database, p engine.Engine) any { return NewService(db, p, false) },
				wantName: "orders",
				wantType: corev1.ServiceTypeClusterIP,
			},
		}
		for _, tt := range tests {
			t.Run(string(tc.engine)+"/"+tt.name, func(t *testing.T) {
				db := newDatabase(tc.engine, tc.version)
				var svc corev1.Service
				if err := Convert(tt.build(db, p), &svc); err != nil {
					t.Fatalf("Convert(Service): %v", err)
				}
				if svc.Kind != "Service" || svc.APIVersion != "v1" {
					t.Errorf("TypeMeta = %s %s, want v1 Service", svc.APIVersion, svc.Kind)
				}
				if svc.Name != tt.wantName || svc.Namespace != testNamespace {
					t.Errorf("name = %s/%s, want %s/%s", svc.Namespace, svc.Name, testNamespace, tt.wantName)
				}
				if !reflect.DeepEqual(svc.Labels, wantLabels(tc.engine)) {
					t.Errorf("labels = %v, want %v", svc.Labels, wantLabels(tc.engine))
				}
				if !reflect.DeepEqual(svc.OwnerReferences, wantOwnerReferences) {
					t.Errorf("ownerReferences = %+v, want %+v", svc.OwnerReferences, wantOwnerReferences)
				}
				if svc.Spec.Type != tt.wantType {
					t.Errorf("type = %q, want %q", svc.Spec.Type, tt.wantType)
				}
				if svc.Spec.ClusterIP != tt.wantClusterIP {
					t.Errorf("clusterIP = %q, want %q", svc.Spec.ClusterIP, tt.wantClusterIP)
				}
				if svc.Spec.PublishNotReadyAddresses != tt.wantPublishNotReady {
					t.Errorf("publishNotReadyAddresses = %v, want %v", svc.Spec.PublishNotReadyAddresses, tt.wantPublishNotReady)
				}
				if !reflect.DeepEqual(svc.Spec.Selector, wantSelectorLabels(tc.engine)) {
					t.Errorf("selector = %v, want %v", svc.Spec.Selector, wantSelectorLabels(tc.engine))
				}
				if !reflect.DeepEqual(svc.Spec.Ports, wantPorts) {
					t.Errorf("ports = %+v, want %+v", svc.Spec.Ports, wantPorts)
				}
			})
		}
	}
}

// TestServicePortsTargetContainerPort checks that each Service's targetPort
// names a port the container declares, and that the liveness probe does too.
func TestServicePortsTargetContainerPort(t *testing.T) {
	for _, tc := range engineCases {
		t.Run(string(tc.engine), func(t *testing.T) {
			db := newDatabase(tc.engine, tc.version)
			p := lookup(t, tc.engine)
			c := onlyContainer(t, buildStatefulSet(t, db, p, tc.catalogImage, StorageOf(db)))
			declared := map[string]int32{}
			for _, cp := range c.Ports {
				declared[cp.Name] = cp.ContainerPort
			}
			for _, ac := range []any{NewHeadlessService(db, p), NewService(db, p, false)} {
				var svc corev1.Service
				if err := Convert(ac, &svc); err != nil {
					t.Fatalf("Convert(Service): %v", err)
				}
				for _, sp := range svc.Spec.Ports {
					if sp.TargetPort.Type != intstr.String {
						t.Errorf("%s: targetPort %v is not a port name", svc.Name, sp.TargetPort)
						continue
					}
					if got, ok := declared[sp.TargetPort.StrVal]; !ok || got != sp.Port {
						t.Errorf("%s: targetPort %q resolves to %d (declared %v), want %d", svc.Name, sp.TargetPort.StrVal, got, ok, sp.Port)
					}
				}
			}
			if lp := c.LivenessProbe.TCPSocket.Port; declared[lp.StrVal] != tc.port {
				t.Errorf("liveness port %v does not name the %d container port", lp, tc.port)
			}
		})
	}
}

// TestOwnerReferencesOnEveryObject checks that every object built for a
// Database carries exactly one controller reference to it.
func TestOwnerReferencesOnEveryObject(t *testing.T) {
	for _, tc := range engineCases {
		t.Run(string(tc.engine), func(t *testing.T) {
			db := newDatabase(tc.engine, tc.version)
			p := lookup(t, tc.engine)
			objects := map[string]struct {
				ac   any
				into metav1.Object
			}{
				"Secret":          {NewSecret(db, p, testPassword), &corev1.Secret{}},
				"HeadlessService": {NewHeadlessService(db, p), &corev1.Service{}},
				"Service":         {NewService(db, p, false), &corev1.Service{}},
				"StatefulSet":     {NewStatefulSet(db, p, tc.catalogImage, StorageOf(db), nil, false), &appsv1.StatefulSet{}},
			}
			for kind, o := range objects {
				if err := Convert(o.ac, o.into); err != nil {
					t.Fatalf("Convert(%s): %v", kind, err)
				}
				if got := o.into.GetOwnerReferences(); !reflect.DeepEqual(got, wantOwnerReferences) {
					t.Errorf("%s ownerReferences = %+v, want %+v", kind, got, wantOwnerReferences)
				}
				if got := metav1.GetControllerOf(o.into); got == nil || got.UID != testUID {
					t.Errorf("%s controller = %+v, want the Database %s", kind, got, testUID)
				}
				if got := o.into.GetLabels(); !reflect.DeepEqual(got, wantLabels(tc.engine)) {
					t.Errorf("%s labels = %v, want %v", kind, got, wantLabels(tc.engine))
				}
				if got := o.into.GetNamespace(); got != testNamespace {
					t.Errorf("%s namespace = %q, want %q", kind, got, testNamespace)
				}
			}
		})
	}
}

func TestStorageOfStatefulSet(t *testing.T) {
	claim := func(name, size string, class *string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				},
			},
		}
	}
	tests := []struct {
		name      string
		templates []corev1.PersistentVolumeClaim
		wantOK    bool
		wantSize  string
		wantClass *string
	}{
		{name: "no templates", wantOK: false},
		{name: "other template only", templates: []corev1.PersistentVolumeClaim{claim("logs", "3Gi", nil)}, wantOK: false},
		{name: "data without class", templates: []corev1.PersistentVolumeClaim{claim("data", "2Gi", nil)}, wantOK: true, wantSize: "2Gi"},
		{name: "data with class", templates: []corev1.PersistentVolumeClaim{claim("data", "10Gi", ptr.To("fast"))}, wantOK: true, wantSize: "10Gi", wantClass: ptr.To("fast")},
		{
			name:      "data after another template",
			templates: []corev1.PersistentVolumeClaim{claim("logs", "3Gi", ptr.To("slow")), claim("data", "7Gi", ptr.To("fast"))},
			wantOK:    true, wantSize: "7Gi", wantClass: ptr.To("fast"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sts := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{VolumeClaimTemplates: tt.templates}}
			got, ok := StorageOfStatefulSet(sts)
			if ok != tt.wantOK {
				t.Fatalf("StorageOfStatefulSet() ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				if !reflect.DeepEqual(got, Storage{}) {
					t.Errorf("StorageOfStatefulSet() = %+v, want the zero Storage", got)
				}
				return
			}
			if got.Size.String() != tt.wantSize {
				t.Errorf("size = %s, want %s", got.Size.String(), tt.wantSize)
			}
			if !reflect.DeepEqual(got.StorageClassName, tt.wantClass) {
				t.Errorf("storageClassName = %v, want %v", ptr.Deref(got.StorageClassName, "<unset>"), ptr.Deref(tt.wantClass, "<unset>"))
			}
		})
	}
}

// TestStorageOfStatefulSetRoundTrip checks that the storage read back from a
// built StatefulSet is the storage it was built with.
func TestStorageOfStatefulSetRoundTrip(t *testing.T) {
	tests := []Storage{
		{Size: resource.MustParse("1Gi")},
		{Size: resource.MustParse("30Gi"), StorageClassName: ptr.To("premium")},
	}
	for _, tc := range engineCases {
		for _, want := range tests {
			t.Run(string(tc.engine)+"/"+want.Size.String(), func(t *testing.T) {
				db := newDatabase(tc.engine, tc.version)
				sts := buildStatefulSet(t, db, lookup(t, tc.engine), tc.catalogImage, want)
				got, ok := StorageOfStatefulSet(sts)
				if !ok {
					t.Fatal("StorageOfStatefulSet() found no data template")
				}
				if got.Size.Cmp(want.Size) != 0 || !reflect.DeepEqual(got.StorageClassName, want.StorageClassName) {
					t.Errorf("StorageOfStatefulSet() = %s %v, want %s %v", got.Size.String(), ptr.Deref(got.StorageClassName, "<unset>"),
						want.Size.String(), ptr.Deref(want.StorageClassName, "<unset>"))
				}
			})
		}
	}
}
