package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dbcontroller/database-controller/pkg/names"
)

// Volumes. kwok provisions a claim of its class kwok-volume in several
// steps, and plays the steps of every claim and volume of the cluster one
// at a time (kwok v0.8.0 runs the stages of resources other than nodes
// and pods with a parallelism of 1, which no option changes): about 2.7
// claims a second on this machine, slower than the floor makes them once
// kube-controller-manager's client limit is raised. So by default the
// benchmark creates, before each run and outside its clock, one volume per
// Database, of a StorageClass that nothing provisions, each bound in
// advance to the claim its StatefulSet will make (spec.claimRef). Then
// kube-controller-manager's volume binder, not kwok, binds the claims, as
// it does for statically provisioned volumes on any cluster.

// staticClass is the StorageClass of the volumes made in advance.
const staticClass = "bench-static"

// createStaticClass makes the StorageClass of the volumes made in advance:
// no provisioner, immediate binding.
func createStaticClass(ctx context.Context, kube kubernetes.Interface) error {
	immediate := storagev1.VolumeBindingImmediate
	retain := corev1.PersistentVolumeReclaimRetain
	_, err := kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: staticClass},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &immediate,
		ReclaimPolicy:     &retain,
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createStaticVolumes makes, with conc goroutines, one volume for each of
// the n Databases of namespace ns, bound in advance to its first claim.
func createStaticVolumes(ctx context.Context, kube kubernetes.Interface, ns string, n, conc int) error {
	return inParallel(ctx, n, conc, func(i int) error {
		if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, staticVolume(ns, i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the volume of Database %d in %s: %w", i, ns, err)
		}
		return nil
	})
}

// staticVolume is the volume of the i-th Database of namespace ns.
func staticVolume(ns string, i int) *corev1.PersistentVolume {
	db := newDatabase(i, staticClass)
	claim := names.ClaimPrefix(db) + "0"
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: db.Spec.Storage.Size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              staticClass,
			ClaimRef:                      &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim},
			// Never mounted: the pods run on kwok's fake nodes.
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/" + ns + "/" + claim}},
		},
	}
}

// volumeSize is every benchmark Database's storage size.
var volumeSize = resource.MustParse("1Gi")
