package ec2conformance

import (
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/emulator"
)

// lagDelay is the eventual-consistency delay these tests configure: long
// enough for the checks right after a write to run inside it.
const lagDelay = 1500 * time.Millisecond

func lag(d time.Duration) *emulator.Duration { return &emulator.Duration{Duration: d} }

// EC2 is eventually consistent for tags: right after CreateTags or
// DeleteTags succeeds, DescribeNetworkInterfaces (its tags and tag
// filters) and DescribeTags may still show the tags from before. The
// write itself took effect: a conditional DeleteTags by the writer acts
// on the new value at once. Describe catches up, in order.
func TestEmulatorTagsVisibleLate(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{})
	configure(t, tg, emulator.Config{TagDelay: lag(lagDelay)})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Owner", w.name)}).NetworkInterfaceId)
	if got := tagMap(w.eni(id).TagSet); !maps.Equal(got, map[string]string{"Owner": w.name}) {
		t.Fatalf("tags given at creation are not lagged: got %v", got)
	}

	_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags("App", "one", "Team", "a")})
	noErr(t, err, "CreateTags")
	// The writer's own next write acts on the new tags: Team=a is there to
	// be deleted by value although nobody can see it yet.
	_, err = w.ec2.DeleteTags(t.Context(), &ec2.DeleteTagsInput{Resources: []string{id}, Tags: tags("Team", "a")})
	noErr(t, err, "DeleteTags Team=a")
	if got := tagMap(w.eni(id).TagSet); !maps.Equal(got, map[string]string{"Owner": w.name}) {
		t.Errorf("right after the writes DescribeNetworkInterfaces shows %v, want the tags from before", got)
	}
	if got := w.tagsOf(id); !maps.Equal(got, map[string]string{"Owner": w.name}) {
		t.Errorf("right after the writes DescribeTags shows %v, want the tags from before", got)
	}
	if ids, err := w.eniIDs(filter("tag:App", "one")); err != nil || len(ids) != 0 {
		t.Errorf("the filter tag:App=one matched %v (%v) before the tag is visible", ids, err)
	}

	want := map[string]string{"Owner": w.name, "App": "one"}
	waitFor(t, 3*lagDelay, "the tags to become visible", func() (bool, error) {
		got := tagMap(w.eni(id).TagSet)
		if _, team := got["Team"]; team && got["App"] != "one" {
			t.Fatalf("Describe showed %v: the delete before the create", got)
		}
		return maps.Equal(got, want), nil
	})
	if got := w.tagsOf(id); !maps.Equal(got, want) {
		t.Errorf("DescribeTags shows %v once settled, want %v", got, want)
	}
	if ids, err := w.eniIDs(filter("tag:App", "one")); err != nil || len(ids) != 1 {
		t.Errorf("the filter tag:App=one matched %v (%v) once settled, want %s", ids, err, id)
	}
}

// AttachNetworkInterface answers at once, and the attachment is
// "attaching" for a while before it is "attached". The ENI is in use
// meanwhile: a second attach is refused.
func TestEmulatorAttachingBeforeAttached(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{instances: 1})
	configure(t, tg, emulator.Config{AttachDelay: lag(lagDelay)})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	aid := w.attach(id, w.instances[0], 1)
	n := w.eni(id)
	if n.Attachment == nil || n.Attachment.Status != types.AttachmentStatusAttaching || aws.ToString(n.Attachment.AttachmentId) != aid {
		t.Fatalf("right after the attach the ENI's attachment is %+v, want %s attaching", n.Attachment, aid)
	}
	if n.Status != types.NetworkInterfaceStatusInUse {
		t.Errorf("an attaching ENI is %q, want in-use", n.Status)
	}
	_, err := w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: aws.String(id), InstanceId: aws.String(w.instances[0]), DeviceIndex: aws.Int32(2)})
	requireAPIError(t, err, "InvalidNetworkInterface.InUse", 400)
	waitFor(t, 3*lagDelay, "the attachment to be attached", func() (bool, error) {
		a := w.eni(id).Attachment
		return a != nil && a.Status == types.AttachmentStatusAttached, nil
	})
}

// A deleted ENI may still be described for a while; every other call
// knows it is gone at once (a second delete, tags, attach: NotFound).
func TestEmulatorDeletedENIDescribedLate(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{instances: 1})
	configure(t, tg, emulator.Config{DeleteDelay: lag(lagDelay)})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Owner", w.name)}).NetworkInterfaceId)
	_, err := w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	noErr(t, err, "DeleteNetworkInterface")

	if n := w.eni(id); tagMap(n.TagSet)["Owner"] != w.name {
		t.Errorf("the deleted ENI is described with tags %v", tagMap(n.TagSet))
	}
	if ids, err := w.eniIDs(filter("tag:Owner", w.name)); err != nil || len(ids) != 1 {
		t.Errorf("listing right after the delete found %v (%v), want the deleted ENI still", ids, err)
	}
	_, err = w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", 400)
	_, err = w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags("App", "x")})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", 400)
	_, err = w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: aws.String(id), InstanceId: aws.String(w.instances[0]), DeviceIndex: aws.Int32(1)})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", 400)

	waitFor(t, 3*lagDelay, "the deleted ENI to be gone from Describe", func() (bool, error) {
		_, err := w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
		if err != nil && !isENINotFound(err) {
			return false, err
		}
		return err != nil, nil
	})
	if ids, err := w.eniIDs(filter("tag:Owner", w.name)); err != nil || len(ids) != 0 {
		t.Errorf("listing after the delay found %v (%v), want nothing", ids, err)
	}
}
