package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reasons of a Ready condition that names why replicas are not ready.
const (
	ReasonVolumePending        = "VolumePending"
	ReasonVolumeNotProvisioned = "VolumeNotProvisioned"
	ReasonUnschedulable        = "Unschedulable"
	ReasonImagePullFailed      = "ImagePullFailed"
	ReasonCrashLooping         = "CrashLooping"
	ReasonRestarting           = "Restarting"
	ReasonContainerCannotStart = "ContainerCannotStart"
	ReasonContainerNotReady    = "ContainerNotReady"
	ReasonReadinessFailing     = "ReadinessProbeFailing"
)

// NotReadyAfter is how long a container may run without passing its
// readiness probe before that is a cause of its own. The startup probe
// allows up to 15 minutes for a first start, and holds readiness back
// until then; this counts from the container's start.
const NotReadyAfter = 20 * time.Minute

// ReadinessGrace is how long a container that passed its startup probe
// may run, or have been ready before, without passing its readiness probe
// before that is a cause of its own: the readiness probe runs every 10 s,
// and takes a pod out of its Services after three failures.
const ReadinessGrace = time.Minute

// CrashLoopReset is how long a container must have run before it crashed
// for that crash to be a restart of its own, not one of a loop: the
// kubelet's back-off of a container's restarts starts over after it has
// run for 10 minutes.
const CrashLoopReset = 10 * time.Minute

// VolumeGrace is how long a claim may wait for its volume, and a pod for
// its claim, before that is named: provisioning a volume takes a few
// seconds, and naming it for every new Database would cost a status write
// for each one.
const VolumeGrace = 30 * time.Second

// Young reports whether an object created at created is within
// VolumeGrace of now. A zero time is not young.
func Young(created, now time.Time) bool {
	return !created.IsZero() && now.Sub(created) < VolumeGrace
}

// Cause is the first thing that keeps a Database's replicas from being
// ready, in words a person can act on.
type Cause struct {
	Reason string
	// Subject names what the cause is about, and starts Message: "pod
	// db-0", "container postgresql of pod db-0", "pod db-0 cannot pull image
	// postgres:16". A cause is the same cause while its Reason and Subject
	// stay, whatever else the kubelet's words say.
	Subject string
	Message string
	// Stuck is true when waiting will not make it go away: a person should
	// look, and it is worth a Warning event.
	Stuck bool
	// Pod is the pod whose events tell more, for a ReadinessProbeFailing
	// cause: what its probe said (WithProbeOutput); nil otherwise.
	Pod *corev1.Pod
}

// ReadinessProbeFailed starts the message of the kubelet's event of a
// failed readiness probe.
const ReadinessProbeFailed = "Readiness probe failed:"

// WithProbeOutput returns c with what the probe said: the first line of
// event, the message of the kubelet's event of a failed readiness probe.
func (c *Cause) WithProbeOutput(event string) *Cause {
	said := strings.TrimSpace(firstLine(strings.TrimPrefix(event, ReadinessProbeFailed)))
	if said == "" {
		return c
	}
	kept := *c
	kept.Message += ": " + said
	return &kept
}

// CauseInput is what FindCause reads, all of one Database.
type CauseInput struct {
	// Claims are the data volume claims.
	Claims []*corev1.PersistentVolumeClaim
	// ProvisioningFailures holds, for a Pending claim, the message of the
	// newest Warning event on it (such as the provisioner's "storageclass
	// ... not found").
	ProvisioningFailures map[string]string
	// Pods are the Database's pods.
	Pods []*corev1.Pod
	// Now is the time to judge how long a container has not been ready.
	Now time.Time
}

var (
	imagePullReasons   = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
	cannotStartReasons = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError", "PostStartHookError"}
)

// FindCause returns the first cause that blocks progress, looking at the
// claims first (a pod cannot start without its volume), then each pod in
// name order; nil when nothing is known to block.
func FindCause(in CauseInput) *Cause {
	claims := slices.SortedFunc(slices.Values(in.Claims), func(a, b *corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range claims {
		if c.Status.Phase != corev1.ClaimPending || Young(c.CreationTimestamp.Time, in.Now) {
			continue
		}
		subject := "PersistentVolumeClaim " + c.Name
		if msg := in.ProvisioningFailures[c.Name]; msg != "" {
			return &Cause{Reason: ReasonVolumeNotProvisioned, Stuck: true, Subject: subject,
				Message: fmt.Sprintf("%s cannot be provisioned: %s", subject, msg)}
		}
		return &Cause{Reason: ReasonVolumePending, Subject: subject, Message: subject + " is waiting for its volume"}
	}
	pods := slices.SortedFunc(slices.Values(in.Pods), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range pods {
		if c := podCause(p, in.Now, claimBound(claims, p)); c != nil {
			return c
		}
	}
	return nil
}

// claimBound reports whether pod p's claim, which the StatefulSet
// controller names <template>-<pod>, is Bound.
func claimBound(claims []*corev1.PersistentVolumeClaim, p *corev1.Pod) bool {
	for _, c := range claims {
		if strings.HasSuffix(c.Name, "-"+p.Name) && c.Status.Phase == corev1.ClaimBound {
			return true
		}
	}
	return false
}

// podCause is what keeps pod p from being ready, if anything is known to.
// claimBound says its claim is Bound. A pod being deleted (a rollout, a
// drain, its namespace going) has none: how its containers end then is
// what its deletion does, no fault.
func podCause(p *corev1.Pod, now time.Time, claimBound bool) *Cause {
	if p.DeletionTimestamp != nil {
		return nil
	}
	pod := "pod " + p.Name
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			continue
		}
		if waitsForVolume(c.Message) {
			// The scheduler waits for the claim to bind: not stuck unless
			// the claim is, and the claim speaks for itself. Once the claim
			// is Bound, the scheduler tries the pod again by itself: the
			// condition is the last attempt's, and no cause.
			if Young(p.CreationTimestamp.Time, now) || claimBound {
				continue
			}
			return &Cause{Reason: ReasonVolumePending, Subject: pod, Message: fmt.Sprintf("%s waits for its volume: %s", pod, c.Message)}
		}
		return &Cause{Reason: ReasonUnschedulable, Stuck: true, Subject: pod,
			Message: fmt.Sprintf("%s cannot be scheduled: %s", pod, c.Message)}
	}
	statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		container := fmt.Sprintf("container %s of %s", cs.Name, pod)
		switch {
		case slices.Contains(imagePullReasons, w.Reason):
			subject := fmt.Sprintf("%s cannot pull image %s", pod, cs.Image)
			return &Cause{Reason: ReasonImagePullFailed, Stuck: true, Subject: subject,
				Message: fmt.Sprintf("%s: %s", subject, orReason(w.Message, w.Reason))}
		case w.Reason == "CrashLoopBackOff":
			return &Cause{Reason: ReasonCrashLooping, Stuck: true, Subject: container,
				Message: fmt.Sprintf("%s keeps crashing; it last ended with %s", container, lastExit(cs))}
		case slices.Contains(cannotStartReasons, w.Reason):
			return &Cause{Reason: ReasonContainerCannotStart, Stuck: true, Subject: container,
				Message: fmt.Sprintf("%s cannot start: %s", container, orReason(w.Message, w.Reason))}
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		// An init container that fails runs again and again before the
		// server can start: between two of its runs it has just ended, or
		// runs, and is as much a crash loop as while it waits.
		if crashed := lastCrash(cs); crashed != nil && !cs.Ready && cs.State.Waiting == nil {
			return crashCause(fmt.Sprintf("container %s of %s", cs.Name, pod), cs, crashed)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		container := fmt.Sprintf("container %s of %s", cs.Name, pod)
		if r := cs.State.Running; r != nil && !cs.Ready && cs.Started != nil && *cs.Started && !r.StartedAt.IsZero() &&
			now.Sub(latest(r.StartedAt.Time, readySince(p))) > ReadinessGrace {
			// The server passed its startup probe, so it started serving,
			// and has failed the readiness probe since (also after a crash
			// long enough ago): what the probe said is in the pod's events
			// (the caller adds it, WithProbeOutput).
			return &Cause{Reason: ReasonReadinessFailing, Stuck: true, Subject: container, Pod: p,
				Message: fmt.Sprintf("%s runs but fails its readiness probe", container)}
		}
		if crashed := lastCrash(cs); crashed != nil && !cs.Ready && cs.State.Waiting == nil {
			return crashCause(container, cs, crashed)
		}
		passedStartup := cs.Started != nil && *cs.Started
		if r := cs.State.Running; r != nil && !cs.Ready && !passedStartup && !r.StartedAt.IsZero() && now.Sub(r.StartedAt.Time) > NotReadyAfter {
			return &Cause{Reason: ReasonContainerNotReady, Stuck: true, Subject: container, Message: fmt.Sprintf(
				"%s has run for more than %s without passing its readiness probe (kubectl describe pod %s shows what the probe said)",
				container, NotReadyAfter, p.Name)}
		}
	}
	return nil
}

// crashCause is the cause of container, whose status is cs, after it
// crashed: restarting after one crash, a crash loop after more.
func crashCause(container string, cs corev1.ContainerStatus, crashed *corev1.ContainerStateTerminated) *Cause {
	if !crashLoop(cs, crashed) {
		// One crash, and the kubelet restarts it: what it is, no loop,
		// and nothing for a person to do yet.
		return &Cause{Reason: ReasonRestarting, Subject: container,
			Message: fmt.Sprintf("%s is restarting; it ended with %s", container, DescribeExit(crashed))}
	}
	// Between two crashes the container has just ended, or runs for a
	// moment: still a crash loop, so that the cause does not flap (a status
	// write and a Warning) with each restart.
	return &Cause{Reason: ReasonCrashLooping, Stuck: true, Subject: container,
		Message: fmt.Sprintf("%s keeps crashing; it last ended with %s", container, DescribeExit(crashed))}
}

// readySince is when pod's Ready condition last changed; zero when it has none.
func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// crashLoop reports whether crashed, how cs last ended, is one crash of a
// loop: its container crashed before (the kubelet restarted it), and this
// last run was shorter than CrashLoopReset, so the kubelet's back-off goes
// on. A run of unknown length counts as short.
func crashLoop(cs corev1.ContainerStatus, crashed *corev1.ContainerStateTerminated) bool {
	crashes := cs.RestartCount
	if cs.State.Terminated != nil {
		// Ended, and not restarted yet: one more than the restarts.
		crashes++
	}
	if crashes < 2 {
		return false
	}
	if crashed.StartedAt.IsZero() || crashed.FinishedAt.IsZero() {
		return true
	}
	return crashed.FinishedAt.Sub(crashed.StartedAt.Time) < CrashLoopReset
}

// StartingContainers reports whether a pod has a container that runs and
// is not ready yet: it may become a cause with time alone.
func StartingContainers(pods []*corev1.Pod) bool {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && !cs.Ready {
				return true
			}
		}
	}
	return false
}

// CauseDue is the first moment after in.Now at which time alone makes
// FindCause name a cause, when it names none at in.Now: a claim, or a pod
// waiting for its claim, at the end of VolumeGrace; a container that runs
// and is not ready, at the end of ReadinessGrace or NotReadyAfter. Zero
// when no such moment is known. A pass that finds no cause looks again
// then, once, in place of polling on a backoff.
func CauseDue(in CauseInput) time.Time {
	var due time.Time
	soonest := func(at time.Time) {
		if at.After(in.Now) && (due.IsZero() || at.Before(due)) {
			due = at
		}
	}
	for _, c := range in.Claims {
		if c.Status.Phase == corev1.ClaimPending && Young(c.CreationTimestamp.Time, in.Now) {
			soonest(c.CreationTimestamp.Add(VolumeGrace))
		}
	}
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
				waitsForVolume(c.Message) && Young(p.CreationTimestamp.Time, in.Now) && !claimBound(in.Claims, p) {
				soonest(p.CreationTimestamp.Add(VolumeGrace))
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			r := cs.State.Running
			if r == nil || cs.Ready || r.StartedAt.IsZero() {
				continue
			}
			// The first instant past each grace, which FindCause compares
			// with ">".
			if cs.Started != nil && *cs.Started {
				soonest(latest(r.StartedAt.Time, readySince(p)).Add(ReadinessGrace + time.Nanosecond))
			} else {
				soonest(r.StartedAt.Add(NotReadyAfter + time.Nanosecond))
			}
		}
	}
	return due
}

// lastCrash is how a container last ended when that was a failure (a
// non-zero exit): just now, or before its current run; nil otherwise. The
// kubelet's ContainerStatusUnknown (exit code 137), which it gives a
// container it cannot find, such as one never started in a pod being
// deleted, is no crash of the server.
func lastCrash(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if t != nil {
			if t.ExitCode != 0 && t.Reason != "ContainerStatusUnknown" {
				return t
			}
			return nil
		}
	}
	return nil
}

// lastExit describes how a container last ended: "OOMKilled (exit code 137)".
func lastExit(cs corev1.ContainerStatus) string {
	return DescribeExit(cs.LastTerminationState.Terminated)
}

// DescribeExit describes how a container ended: its reason, exit code and
// the first line of its message, "Error (exit code 1): FATAL: ...".
func DescribeExit(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return "an unknown exit"
	}
	s := fmt.Sprintf("%s (exit code %d)", orReason(t.Reason, "an error"), t.ExitCode)
	if t.Message != "" {
		s += ": " + firstLine(t.Message)
	}
	return s
}

func orReason(message, reason string) string {
	if message != "" {
		return firstLine(message)
	}
	return reason
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// waitsForVolume reports whether the scheduler's message says the pod waits
// for its volume to bind, which passes by itself once it is provisioned,
// such as "pod has unbound immediate PersistentVolumeClaims" or "bound to
// non-existent persistentvolume".
func waitsForVolume(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "unbound immediate persistentvolumeclaims") ||
		strings.Contains(m, "non-existent persistentvolume") ||
		// A claim, or the volume a claim was just bound to, that the
		// scheduler's cache does not hold yet ("persistentvolume
		// \"pvc-...\" not found", seen in CI on kwok as a Database's
		// first pod was scheduled).
		strings.Contains(m, "persistentvolume") && strings.Contains(m, "not found")
}
