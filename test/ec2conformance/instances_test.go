package ec2conformance

import (
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// RunInstances gives every instance a primary ENI at device index 0 that
// is deleted on termination and carries the network-interface tags of
// TagSpecifications; DescribeInstances and DescribeNetworkInterfaces agree.
func TestRunInstancesPrimaryENI(t *testing.T) {
	t.Parallel()
	w := newWorld(t, suite, worldSpec{})
	out, err := w.ec2.RunInstances(t.Context(), &ec2.RunInstancesInput{
		ImageId: aws.String(imageID()), InstanceType: types.InstanceType(largeType), MinCount: aws.Int32(2), MaxCount: aws.Int32(2),
		SubnetId: aws.String(w.a.id), SecurityGroupIds: []string{w.sg2},
		TagSpecifications: []types.TagSpecification{
			{ResourceType: types.ResourceTypeInstance, Tags: tags("Name", w.name, "Role", "node")},
			{ResourceType: types.ResourceTypeNetworkInterface, Tags: tags("Role", "primary-eni")},
		},
	})
	noErr(t, err, "RunInstances MinCount=MaxCount=2")
	if len(out.Instances) != 2 {
		t.Fatalf("RunInstances returned %d instances, want 2", len(out.Instances))
	}
	var ids []string
	for _, i := range out.Instances {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	w.ownInstances(ids...)

	waitFor(t, 60*time.Second, "the instances to run", func() (bool, error) {
		d, err := w.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{
			Filters: []types.Filter{filter("vpc-id", w.vpc), filter("instance-state-name", "running")}})
		if err != nil {
			return false, err
		}
		n := 0
		for _, r := range d.Reservations {
			n += len(r.Instances)
		}
		return n == 2, nil
	})

	primaries := map[string]bool{}
	for _, id := range ids {
		inst := w.instance(id)
		if aws.ToString(inst.SubnetId) != w.a.id || aws.ToString(inst.VpcId) != w.vpc || aws.ToString(inst.Placement.AvailabilityZone) != w.a.az {
			t.Errorf("%s: subnet/vpc/zone %s/%s/%s", id, aws.ToString(inst.SubnetId), aws.ToString(inst.VpcId), aws.ToString(inst.Placement.AvailabilityZone))
		}
		if inst.InstanceType != types.InstanceType(largeType) {
			t.Errorf("%s: type %s", id, inst.InstanceType)
		}
		if got := tagMap(inst.Tags); !maps.Equal(got, map[string]string{"Name": w.name, "Role": "node"}) {
			t.Errorf("%s: tags %v", id, got)
		}
		if len(inst.NetworkInterfaces) != 1 {
			t.Fatalf("%s: %d interfaces, want the primary only", id, len(inst.NetworkInterfaces))
		}
		ni := inst.NetworkInterfaces[0]
		if ni.Attachment == nil || aws.ToInt32(ni.Attachment.DeviceIndex) != 0 || !aws.ToBool(ni.Attachment.DeleteOnTermination) {
			t.Errorf("%s: primary attachment %+v, want device index 0 and DeleteOnTermination", id, ni.Attachment)
		}
		pid := aws.ToString(ni.NetworkInterfaceId)
		primaries[pid] = true
		p := w.eni(pid)
		if aws.ToString(p.PrivateIpAddress) != aws.ToString(inst.PrivateIpAddress) {
			t.Errorf("%s: instance IP %s, primary ENI IP %s", id, aws.ToString(inst.PrivateIpAddress), aws.ToString(p.PrivateIpAddress))
		}
		if p.Status != types.NetworkInterfaceStatusInUse || p.Attachment == nil || aws.ToString(p.Attachment.InstanceId) != id ||
			aws.ToInt32(p.Attachment.DeviceIndex) != 0 {
			t.Errorf("%s: primary ENI %s status %q attachment %+v", id, pid, p.Status, p.Attachment)
		}
		if got := groupIDs(p.Groups); !slices.Equal(got, []string{w.sg2}) {
			t.Errorf("%s: primary ENI groups %v, want [%s]", id, got, w.sg2)
		}
		if got := tagMap(p.TagSet); got["Role"] != "primary-eni" {
			t.Errorf("%s: primary ENI tags %v, want Role=primary-eni from TagSpecifications", id, got)
		}
	}
	if len(primaries) != 2 {
		t.Errorf("two instances share primary ENIs: %v", primaries)
	}
	got, err := w.eniIDs(filter("attachment.device-index", "0"))
	noErr(t, err, "primary ENIs by filter")
	if !slices.Equal(got, slices.Sorted(maps.Keys(primaries))) {
		t.Errorf("attachment.device-index=0 matched %v, want %v", got, slices.Sorted(maps.Keys(primaries)))
	}
}

// RunInstances with a ClientToken is idempotent; the same token with
// other parameters is IdempotentParameterMismatch.
func TestRunInstancesClientToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t, suite, worldSpec{})
	run := func(typ string) (string, error) {
		out, err := w.ec2.RunInstances(t.Context(), &ec2.RunInstancesInput{ImageId: aws.String(imageID()), InstanceType: types.InstanceType(typ),
			MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(w.a.id), ClientToken: aws.String(w.name)})
		if err != nil {
			return "", err
		}
		id := aws.ToString(out.Instances[0].InstanceId)
		w.ownInstances(id)
		return id, nil
	}
	a, err := run(smallType)
	noErr(t, err, "RunInstances")
	b, err := run(smallType)
	noErr(t, err, "RunInstances retried")
	if a != b {
		t.Fatalf("same ClientToken launched %s and %s", a, b)
	}
	d, err := w.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{Filters: []types.Filter{filter("vpc-id", w.vpc)}})
	noErr(t, err, "DescribeInstances")
	if n := len(d.Reservations); n != 1 {
		t.Errorf("the VPC has %d reservations, want 1", n)
	}

	t.Run("same token, other parameters", func(t *testing.T) {
		c, err := run(largeType)
		if err == nil {
			t.Fatalf("RunInstances with a used ClientToken and another InstanceType returned %s (the first launch was %s), want IdempotentParameterMismatch", c, a)
		}
		requireAPIError(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)
	})
}

// DescribeInstances filters.
func TestDescribeInstancesFilters(t *testing.T) {
	t.Parallel()
	w := newWorld(t, suite, worldSpec{instances: 2})
	inB := aws.ToString(w.runInstance(smallType, w.b.id).InstanceId)
	all := sorted(append([]string{inB}, w.instances...)...)
	cases := []struct {
		name    string
		filters []types.Filter
		want    []string
	}{
		{"vpc-id", nil, all},
		{"instance-id", []types.Filter{filter("instance-id", inB)}, []string{inB}},
		{"subnet-id", []types.Filter{filter("subnet-id", w.a.id)}, sorted(w.instances...)},
		{"availability-zone", []types.Filter{filter("availability-zone", w.b.az)}, []string{inB}},
		{"instance-type", []types.Filter{filter("instance-type", smallType)}, []string{inB}},
		{"tag:Name", []types.Filter{filter("tag:Name", w.name)}, all},
		{"network-interface.network-interface-id", []types.Filter{filter("network-interface.network-interface-id", w.primaryENI(inB))}, []string{inB}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := w.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{
				Filters: append([]types.Filter{filter("vpc-id", w.vpc)}, c.filters...)})
			noErr(t, err, "DescribeInstances %s", describeFilters(c.filters))
			var got []string
			for _, r := range out.Reservations {
				for _, i := range r.Instances {
					got = append(got, aws.ToString(i.InstanceId))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("DescribeInstances %s = %v, want %v", describeFilters(c.filters), got, c.want)
			}
		})
	}
	_, err := w.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	requireAPIError(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)
}

// DescribeInstanceTypes reports the interface limit of each type.
func TestDescribeInstanceTypes(t *testing.T) {
	t.Parallel()
	c := suite.client()
	want := map[string]int32{"t3.micro": 2, "m5.large": 3, "m5.4xlarge": 8}
	out, err := c.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"t3.micro", "m5.large", "m5.4xlarge"}})
	noErr(t, err, "DescribeInstanceTypes")
	got := map[string]int32{}
	for _, it := range out.InstanceTypes {
		if it.NetworkInfo == nil {
			t.Fatalf("%s has no NetworkInfo", it.InstanceType)
		}
		got[string(it.InstanceType)] = aws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces)
	}
	if !maps.Equal(got, want) {
		t.Errorf("MaximumNetworkInterfaces %v, want %v", got, want)
	}

	out, err = c.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"t3.micro", "m5.large"}, Filters: []types.Filter{filter("network-info.maximum-network-interfaces", "3")}})
	noErr(t, err, "DescribeInstanceTypes with a filter")
	if len(out.InstanceTypes) != 1 || out.InstanceTypes[0].InstanceType != "m5.large" {
		t.Errorf("network-info.maximum-network-interfaces=3 matched %v, want m5.large", out.InstanceTypes)
	}

	_, err = c.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"x9.nonexistent"}})
	requireAPIError(t, err, "InvalidInstanceType", http.StatusBadRequest)
}

// TerminateInstances deletes the ENIs marked DeleteOnTermination (the
// primary, and any other so marked) and detaches the others, which stay
// available.
func TestTerminateInstances(t *testing.T) {
	t.Parallel()
	w := newWorld(t, suite, worldSpec{instances: 1})
	inst := w.instances[0]
	primary := w.primaryENI(inst)
	keep := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String("keep")}).NetworkInterfaceId)
	drop := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String("drop")}).NetworkInterfaceId)
	w.attach(keep, inst, 1)
	dropAttachment := w.attach(drop, inst, 2)
	_, err := w.ec2.ModifyNetworkInterfaceAttribute(t.Context(), &ec2.ModifyNetworkInterfaceAttributeInput{NetworkInterfaceId: aws.String(drop),
		Attachment: &types.NetworkInterfaceAttachmentChanges{AttachmentId: aws.String(dropAttachment), DeleteOnTermination: aws.Bool(true)}})
	noErr(t, err, "setting DeleteOnTermination")

	out, err := w.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{inst}})
	noErr(t, err, "TerminateInstances")
	if len(out.TerminatingInstances) != 1 {
		t.Fatalf("TerminateInstances reported %d instances", len(out.TerminatingInstances))
	}
	sc := out.TerminatingInstances[0]
	if sc.PreviousState.Name != types.InstanceStateNameRunning ||
		(sc.CurrentState.Name != types.InstanceStateNameShuttingDown && sc.CurrentState.Name != types.InstanceStateNameTerminated) {
		t.Errorf("state change %s -> %s, want running -> shutting-down", sc.PreviousState.Name, sc.CurrentState.Name)
	}

	gone := func(id string) (bool, error) {
		_, err := w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
		if isENINotFound(err) {
			return true, nil
		}
		return false, err
	}
	waitFor(t, 60*time.Second, "the primary ENI to be deleted", func() (bool, error) { return gone(primary) })
	waitFor(t, 60*time.Second, "the DeleteOnTermination ENI to be deleted", func() (bool, error) { return gone(drop) })
	waitFor(t, 60*time.Second, "the other ENI to be detached", func() (bool, error) {
		n := w.eni(keep)
		return n.Status == types.NetworkInterfaceStatusAvailable && n.Attachment == nil, nil
	})
	waitFor(t, 60*time.Second, "the instance to be terminated", func() (bool, error) {
		return w.instance(inst).State.Name == types.InstanceStateNameTerminated, nil
	})

	// Terminating again is harmless; an unknown instance is not.
	out, err = w.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{inst}})
	noErr(t, err, "terminating a terminated instance")
	if got := out.TerminatingInstances[0].CurrentState.Name; got != types.InstanceStateNameTerminated {
		t.Errorf("terminated instance reports %s", got)
	}
	_, err = w.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	requireAPIError(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)

	// A terminated instance takes no interfaces.
	_, err = w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(keep),
		InstanceId: aws.String(inst), DeviceIndex: aws.Int32(1)})
	requireAPIError(t, err, "IncorrectInstanceState", http.StatusBadRequest)
}
