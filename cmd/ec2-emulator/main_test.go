package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
)

// badValues lists, for every flag of the command, values it must refuse;
// a flag without any names why in none.
var badValues = map[string][]string{
	"listen":              {"", "localhost", ":99999", "127.0.0.1:", "0.0.0.0:http"},
	"region":              {"", "US-EAST-1", "us-east", "useast1", "us east 1"},
	"seed-file":           {"/nonexistent/world.json", "/"},
	"throttling":          {"maybe"},
	"latency":             {"-1s", "slow"},
	"fault-rate":          {"-0.1", "1.5", "NaN", "some"},
	"detach-delay":        {"-1ms", "x"},
	"visibility-delay":    {"-1s", "x"},
	"tag-delay":           {"-1s", "x"},
	"attach-delay":        {"-1s", "x"},
	"delete-delay":        {"-1s", "x"},
	"ignore-client-token": {"maybe"},
	"seed":                {"x", "1.5", "99999999999999999999"},
	"version":             {"maybe"},
}

// none lists the flags that take any value, and why.
var none = map[string]string{}

// Every flag's bad values are refused before anything starts, in one
// line naming the flag, the value and what is allowed; the command exits
// 2. A flag added without bad values here fails the test.
func TestEveryFlagRefusesBadValues(t *testing.T) {
	var o options
	clitest.EveryFlagHasBadValues(t, flags(&o), badValues, none)
	// parse, not runMain: a value wrongly accepted would start serving.
	clitest.RefusesInOneLine(t, badValues, func(args []string, out io.Writer) error { _, err := parse(args, out); return err })
	// Refused, the command exits 2 with that one line, before it serves.
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"--latency=-1s"}, &stdout, &stderr); code != 2 || stdout.Len() != 0 ||
		stderr.String() != "ec2-emulator: invalid --latency=-1s: a duration >= 0, such as 20ms\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

func TestGoodValues(t *testing.T) {
	o, err := parse([]string{"--listen=4566", "--region=eu-central-2", "--latency=0", "--fault-rate=1", "--detach-delay=0",
		"--visibility-delay=2s", "--tag-delay=1s", "--attach-delay=2s", "--delete-delay=3s", "--seed=-7", "--throttling",
		"--ignore-client-token"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != ":4566" || o.region != "eu-central-2" || o.faultRate != 1 || o.visibility != 2*time.Second || o.seed != -7 || !o.throttling ||
		o.tagDelay != time.Second || o.attachDelay != 2*time.Second || o.deleteDelay != 3*time.Second || !o.ignoreClientToken {
		t.Fatalf("%+v", o)
	}
	if _, err := parse([]string{"--region=us-gov-west-1", "--listen=127.0.0.1:0"}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
}

// --version prints the build as eni-operator does: the version, the VCS
// revision, the Go version.
func TestVersion(t *testing.T) {
	clitest.PrintsVersion(t, "ec2-emulator", runMain)
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "--latency") &&
		!strings.Contains(stderr.String(), "-latency") {
		t.Fatalf("exit %d: %q", code, stderr.String())
	}
}
