module github.com/dbcontroller/database-controller/hack/tools/node

go 1.26.0

require golang.org/x/sys v0.44.0
