package ec2conformance

import (
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// DescribeNetworkInterfaceAttribute answers one attribute per call. Each
// case takes its target, so the cases run against moto too (moto_test.go).

// attributeCases are the cases of this file, by name.
func attributeCases() map[string]func(*testing.T, *target) {
	return map[string]func(*testing.T, *target){
		"DescribeAttributes":          testDescribeAttributes,
		"DescribeAttachmentAttribute": testDescribeAttachmentAttribute,
		"DescribeUnknownAttribute":    testDescribeUnknownAttribute,
	}
}

func TestNetworkInterfaceAttributes(t *testing.T) {
	runOnSuite(t, attributeCases())
}

// describeAttribute asks for one attribute of an ENI or fails the test.
func (w *world) describeAttribute(id string, a types.NetworkInterfaceAttribute) *ec2.DescribeNetworkInterfaceAttributeOutput {
	w.t.Helper()
	out, err := w.ec2.DescribeNetworkInterfaceAttribute(w.t.Context(), &ec2.DescribeNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(id), Attribute: a})
	noErr(w.t, err, "DescribeNetworkInterfaceAttribute %s of %s", a, id)
	if aws.ToString(out.NetworkInterfaceId) != id {
		w.t.Errorf("answer for %s is about %q", id, aws.ToString(out.NetworkInterfaceId))
	}
	return out
}

// description, groupSet and sourceDestCheck answer the ENI's values,
// as ModifyNetworkInterfaceAttribute left them.
func testDescribeAttributes(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String(w.name + " first"),
		Groups: []string{w.sg, w.sg2}}).NetworkInterfaceId)
	if got := aws.ToString(w.describeAttribute(id, types.NetworkInterfaceAttributeDescription).Description.Value); got != w.name+" first" {
		t.Errorf("description %q, want %q", got, w.name+" first")
	}
	if got := groupIDs(w.describeAttribute(id, types.NetworkInterfaceAttributeGroupSet).Groups); !slices.Equal(got, sorted(w.sg, w.sg2)) {
		t.Errorf("groupSet %v, want %v", got, sorted(w.sg, w.sg2))
	}
	if v := w.describeAttribute(id, types.NetworkInterfaceAttributeSourceDestCheck).SourceDestCheck; v == nil || !aws.ToBool(v.Value) {
		t.Errorf("sourceDestCheck %+v, want true (EC2's default)", v)
	}
	_, err := w.ec2.ModifyNetworkInterfaceAttribute(t.Context(), &ec2.ModifyNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(id), SourceDestCheck: &types.AttributeBooleanValue{Value: aws.Bool(false)}})
	noErr(t, err, "turning the source/destination check off")
	_, err = w.ec2.ModifyNetworkInterfaceAttribute(t.Context(), &ec2.ModifyNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(id), Description: &types.AttributeValue{Value: aws.String(w.name + " second")}})
	noErr(t, err, "changing the description")
	if v := w.describeAttribute(id, types.NetworkInterfaceAttributeSourceDestCheck).SourceDestCheck; v == nil || aws.ToBool(v.Value) {
		t.Errorf("sourceDestCheck %+v after turning it off, want false", v)
	}
	if got := aws.ToString(w.describeAttribute(id, types.NetworkInterfaceAttributeDescription).Description.Value); got != w.name+" second" {
		t.Errorf("description %q after the change, want %q", got, w.name+" second")
	}
}

// attachment is absent while the ENI is not attached and names the
// instance, device index and attachment once it is.
func testDescribeAttachmentAttribute(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{instances: 1})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	if a := w.describeAttribute(id, types.NetworkInterfaceAttributeAttachment).Attachment; a != nil && aws.ToString(a.AttachmentId) != "" {
		t.Errorf("an unattached ENI's attachment attribute is %+v, want none", a)
	}
	aid := w.attach(id, w.instances[0], 1)
	a := w.describeAttribute(id, types.NetworkInterfaceAttributeAttachment).Attachment
	if a == nil || aws.ToString(a.AttachmentId) != aid || aws.ToString(a.InstanceId) != w.instances[0] || aws.ToInt32(a.DeviceIndex) != 1 {
		t.Fatalf("attachment %+v, want %s of %s at device index 1", a, aid, w.instances[0])
	}
}

// An attribute EC2 does not know is InvalidParameterValue; an unknown
// ENI is InvalidNetworkInterfaceID.NotFound.
func testDescribeUnknownAttribute(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	_, err := w.ec2.DescribeNetworkInterfaceAttribute(t.Context(), &ec2.DescribeNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(id), Attribute: "colour"})
	requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	_, err = w.ec2.DescribeNetworkInterfaceAttribute(t.Context(), &ec2.DescribeNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String("eni-0123456789abcdef0"), Attribute: types.NetworkInterfaceAttributeDescription})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", http.StatusBadRequest)
}
