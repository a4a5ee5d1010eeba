package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stop stops the daemons (newest first), then kube-apiserver and etcd,
// and removes everything the node made: containers, mounts, network namespaces, links, iptables rules,
// cgroups, changed sysctls and Dir. The logs stay in LogDir.
func (c *Cluster) Stop() error {
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].Name == "containerd" {
			// The kubelet is gone: end the containers now, so that the
			// operator's watches close and the API server stops at once.
			killCgroup()
		}
		if !c.procs[i].Stop(10 * time.Second) {
			c.logf("%s did not stop within 10s of SIGTERM: killed", c.procs[i].Name)
		}
	}
	c.procs = nil
	c.launcher.Close()
	var errs []error
	if c.cp != nil {
		errs = append(errs, c.cp.Stop())
		c.cp = nil
	}
	return errors.Join(append(errs, teardown(c.cfg))...)
}

// teardown removes what a node in cfg.Dir left, whether Stop ran or the
// run was killed; every step is skipped when there is nothing to do.
func teardown(cfg Config) error {
	if !filepath.IsAbs(cfg.Dir) || len(cfg.Dir) < len("/x/y") {
		return fmt.Errorf("refusing Dir %q: it must be an absolute path of the node's own", cfg.Dir)
	}
	var errs []error
	// Containers first: every process in the kubelet's cgroups, then the
	// shims and daemons that name the node's directory (containerd's
	// socket, the kubelet's root) on their command line.
	killCgroup()
	killMentioning(cfg.Dir)
	if kp := filepath.Join(cfg.NodeBin, "bin", "kube-proxy"); fileExists(kp) && fileExists(cfg.Dir) {
		// kube-proxy removes its own iptables chains.
		_ = run(kp, "--cleanup")
	}
	if fileExists(cfg.Dir) {
		errs = append(errs, removeKubeChains())
	}
	errs = append(errs, unmountUnder(cfg.Dir), removeNetns(cfg.Dir))
	// The node's links and the ones tests make all start with
	// LinkPrefix (a veth's peer goes with it).
	links, _ := os.ReadDir("/sys/class/net")
	for _, l := range links {
		if strings.HasPrefix(l.Name(), LinkPrefix) && fileExists("/sys/class/net/"+l.Name()) {
			errs = append(errs, run("ip", "link", "del", l.Name()))
		}
	}
	errs = append(errs, removeCgroups(), restoreSysctls(cfg.Dir))
	if err := os.RemoveAll(cfg.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// killCgroup kills every process in the node's cgroup tree, a few rounds
// (a dying runc may leave a child for a moment).
func killCgroup() {
	for round := 0; round < 20; round++ {
		found := false
		for _, h := range cgroupHierarchies() {
			_ = filepath.WalkDir(filepath.Join(h, cgroupRoot), func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				for _, pid := range readPids(filepath.Join(p, "cgroup.procs")) {
					found = true
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				return nil
			})
		}
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readPids(file string) []int {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killMentioning kills the processes whose command line contains dir:
// only this node's daemons and containerd's shims for it name that path.
func killMentioning(dir string) {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(200 * time.Millisecond)
}

// unmountUnder unmounts every mount point below dir, deepest first
// (containers' root filesystems, secrets' tmpfs, sandboxes' /dev/shm).
func unmountUnder(dir string) error {
	points, err := mountPoints(func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") })
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, 0); err != nil {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// mountPoints lists the mount points keep accepts, deepest first.
func mountPoints(keep func(string) bool) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && keep(unescape(fields[4])) {
			points = append(points, unescape(fields[4]))
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, sc.Err()
}

func unescape(s string) string { return strings.ReplaceAll(s, `\040`, " ") }

// removeNetns removes the pods' network namespaces that containerd made
// for this node: the cni-* ones not listed in netns.before (written at
// start).
func removeNetns(dir string) error {
	before := map[string]bool{}
	data, err := os.ReadFile(filepath.Join(dir, "netns.before"))
	if err != nil {
		return nil // no node ran here
	}
	for _, n := range strings.Fields(string(data)) {
		before[n] = true
	}
	entries, _ := os.ReadDir(netnsDir)
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cni-") || before[e.Name()] {
			continue
		}
		p := filepath.Join(netnsDir, e.Name())
		_ = unix.Unmount(p, unix.MNT_DETACH)
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroups removes the node's cgroup tree, deepest first (a cgroup
// goes only once it has no processes and no children).
func removeCgroups() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, cgroupRoot), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := os.Remove(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func restoreSysctls(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, savedSysctls))
	if err != nil {
		return nil
	}
	saved := map[string]string{}
	if err := json.Unmarshal(data, &saved); err != nil {
		return err
	}
	var errs []error
	for k, v := range saved {
		cur, _ := os.ReadFile("/proc/sys/" + k)
		if strings.TrimSpace(string(cur)) != v {
			errs = append(errs, os.WriteFile("/proc/sys/"+k, []byte(v), 0o644))
		}
	}
	return errors.Join(errs...)
}
