// +k8s:deepcopy-gen=package
// +groupName=dbcontroller.io

// Package v1alpha1 is the v1alpha1 version of the dbcontroller.io API.
package v1alpha1
