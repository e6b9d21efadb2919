// Package dbcontroller holds the API group name shared by every version.
package dbcontroller

// GroupName is the API group of the Database resource.
const GroupName = "dbcontroller.io"
