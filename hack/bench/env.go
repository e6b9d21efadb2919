package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// readEnvironment records what the figures depend on: the machine and the
// versions of everything that ran.
func readEnvironment(ctx context.Context, c config, kube kubernetes.Interface) environment {
	e := environment{
		date:      time.Now().UTC().Format("2006-01-02 15:04 MST"),
		cpus:      runtime.NumCPU(),
		goVersion: runtime.Version(),
	}
	e.host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.kernel = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				e.cpuModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == "MemTotal" {
				fs := strings.Fields(v)
				if len(fs) > 0 {
					kb, _ := strconv.ParseFloat(fs[0], 64)
					e.memTotal = kb * 1024
				}
				break
			}
		}
		f.Close()
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				e.clientGo = d.Version
			}
		}
	}
	if v, err := kube.Discovery().ServerVersion(); err == nil {
		e.apiserver = v.GitVersion
	}
	e.kwok = firstLine(exec.CommandContext(ctx, filepath.Join(c.binDir, "kwok"), "--version"))
	e.etcdVer = firstLine(exec.CommandContext(ctx, filepath.Join(c.binDir, "etcd"), "--version"))
	return e
}

func firstLine(cmd *exec.Cmd) string {
	b, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}
