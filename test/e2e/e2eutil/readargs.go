//go:build e2e

package e2eutil

import "strings"

// The suites poll: a Database until it is Running, a client pod until it
// has finished, a writer's log until it has written enough. Each poll was
// a kubectl process, and a kubectl process costs about 64 ms of CPU (its
// start and its discovery cache): on the real node, where four tests
// polled at once, kubectl was the largest user of CPU, 41% of the suite's,
// more than the API server and every database server together. So the read-only commands the tests poll with are served
// in this process, by one client (inprocess.go), with the same request to
// the API server and the same output as kubectl's; every other command,
// and every read this file does not recognise, still runs kubectl.

// readCommand is a kubectl read that can be served in process.
type readCommand struct {
	// verb is "get" or "logs".
	verb string
	// resource is what get reads, as given ("database", "pods", "sts");
	// name the object, "" for a list.
	resource, name string
	namespace      string
	// selector is get's label selector (-l).
	selector string
	// output is get's: "json", or a JSONPath template (jsonpath=...).
	output   string
	jsonPath string
	// container and tail are those of logs (-c, --tail); tail -1: all.
	container string
	tail      int64
}

// parseRead recognises the kubectl reads served in process: `get
// RESOURCE [NAME] [-n NS] [-l SELECTOR] -o json|jsonpath=TEMPLATE` and
// `logs POD [-n NS] [-c CONTAINER] [--tail=N]`, the flags before or after
// the words. ok is false for anything else: another verb, another flag,
// several resources, no output format, --previous.
func parseRead(args []string) (rc readCommand, ok bool) {
	rc.tail = -1
	valued := map[string]*string{
		"-n": &rc.namespace, "--namespace": &rc.namespace,
		"-l": &rc.selector, "--selector": &rc.selector,
		"-o": &rc.output, "--output": &rc.output,
		"-c": &rc.container, "--container": &rc.container,
	}
	words, ok := splitArgs(args, valued, func(flag, value string, hasValue bool) bool {
		if flag != "--tail" || !hasValue {
			return false
		}
		n, good := atoi(value)
		rc.tail = n
		return good
	})
	if !ok {
		return rc, false
	}
	if len(words) == 0 {
		return rc, false
	}
	rc.verb = words[0]
	switch rc.verb {
	case "get":
		if len(words) < 2 || len(words) > 3 || strings.ContainsAny(words[1], ",/") || rc.container != "" || rc.tail != -1 {
			return rc, false
		}
		rc.resource = words[1]
		if len(words) == 3 {
			rc.name = words[2]
		}
		if rc.name != "" && rc.selector != "" {
			return rc, false
		}
		switch {
		case rc.output == "json":
		case strings.HasPrefix(rc.output, "jsonpath=") && len(rc.output) > len("jsonpath="):
			rc.jsonPath = strings.TrimPrefix(rc.output, "jsonpath=")
			rc.output = "jsonpath"
		default:
			return rc, false
		}
	case "logs":
		if len(words) != 2 || strings.Contains(words[1], "/") || rc.selector != "" || rc.output != "" {
			return rc, false
		}
		rc.name = words[1]
	default:
		return rc, false
	}
	return rc, true
}

// splitArgs sorts kubectl's arguments into its words (verb, resource,
// names) and its flags: a flag of valued takes its value after "=" or as
// the next argument; any other flag is other's to take, which tells
// whether it did. ok is false on a flag that none takes, or a valued one
// without its value.
func splitArgs(args []string, valued map[string]*string, other func(flag, value string, hasValue bool) bool) (words []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		flag, value, hasValue := strings.Cut(a, "=")
		switch into := valued[flag]; {
		case !strings.HasPrefix(a, "-"):
			words = append(words, a)
		case into != nil:
			if !hasValue {
				if i+1 >= len(args) {
					return nil, false
				}
				i++
				value = args[i]
			}
			*into = value
		case !other(flag, value, hasValue):
			return nil, false
		}
	}
	return words, true
}

// atoi parses a non-negative decimal.
func atoi(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' || n > 1<<40 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
