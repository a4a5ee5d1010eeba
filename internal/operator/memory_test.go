package operator

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	cases := []struct {
		name    string
		percent int
		env     string
		cgroup  int64
		want    int64
		set     bool
	}{
		{"90% of 512Mi", 90, "", 512 << 20, 512 << 20 / 100 * 90, true},
		{"100%", 100, "", 1000, 1000, true},
		{"GOMEMLIMIT set wins", 90, "300MiB", 512 << 20, 0, false},
		{"GOMEMLIMIT=off wins too", 90, "off", 512 << 20, 0, false},
		{"percent 0 is off", 0, "", 512 << 20, 0, false},
		{"no cgroup limit", 90, "", 0, 0, false},
		{"cgroup v1 unlimited", 90, "", 9223372036854771712, 0, false},
	}
	for _, c := range cases {
		got, set := memoryLimit(c.percent, c.env, c.cgroup)
		if got != c.want || set != c.set {
			t.Errorf("%s: memoryLimit(%d, %q, %d) = %d, %v; want %d, %v", c.name, c.percent, c.env, c.cgroup, got, set, c.want, c.set)
		}
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v2, v2max, v1, junk := write("v2", "536870912\n"), write("v2max", "max\n"), write("v1", "268435456\n"), write("junk", "lots")
	missing := filepath.Join(dir, "missing")
	cases := []struct {
		files []string
		want  int64
	}{
		{[]string{v2, v1}, 536870912},
		{[]string{missing, v1}, 268435456},
		{[]string{v2max, v1}, 0},
		{[]string{junk, v1}, 268435456},
		{[]string{missing}, 0},
	}
	for _, c := range cases {
		if got := cgroupMemoryLimit(c.files); got != c.want {
			t.Errorf("cgroupMemoryLimit(%v) = %d, want %d", c.files, got, c.want)
		}
	}
}
