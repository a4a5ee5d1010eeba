package ec2conformance

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CreateTags and DeleteTags act on several resources of different types in
// one call; DescribeTags reports each resource's type.
func TestTagsOnMultipleResources(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 1})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	resources := map[string]string{ // ID -> DescribeTags resource type
		aws.ToString(n.NetworkInterfaceId): "network-interface",
		w.instances[0]:                     "instance",
		w.a.id:                             "subnet",
		w.vpc:                              "vpc",
		w.sg:                               "security-group",
	}
	ids := slices.Sorted(maps.Keys(resources))
	_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: ids, Tags: tags("Team", "blue", "Tier", "1")})
	noErr(t, err, "CreateTags on %v", ids)

	out, err := w.ec2.DescribeTags(t.Context(), &ec2.DescribeTagsInput{Filters: []types.Filter{
		filter("resource-id", ids...), filter("key", "Team")}})
	noErr(t, err, "DescribeTags")
	got := map[string]string{}
	for _, d := range out.Tags {
		if aws.ToString(d.Value) != "blue" {
			t.Errorf("%s: Team=%q, want blue", aws.ToString(d.ResourceId), aws.ToString(d.Value))
		}
		got[aws.ToString(d.ResourceId)] = string(d.ResourceType)
	}
	if !maps.Equal(got, resources) {
		t.Errorf("DescribeTags reported Team on %v, want %v", got, resources)
	}

	_, err = w.ec2.DeleteTags(t.Context(), &ec2.DeleteTagsInput{Resources: ids, Tags: []types.Tag{{Key: aws.String("Team")}}})
	noErr(t, err, "DeleteTags on %v", ids)
	for _, id := range ids {
		tg := w.tagsOf(id)
		if _, ok := tg["Team"]; ok {
			t.Errorf("%s still has Team after DeleteTags: %v", id, tg)
		}
		if tg["Tier"] != "1" {
			t.Errorf("%s lost Tier, which DeleteTags did not name: %v", id, tg)
		}
	}
}

// A resource that does not exist fails the whole call with its NotFound code.
func TestCreateTagsUnknownResource(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	cases := map[string]string{
		"eni-0123456789abcdef0":    "InvalidNetworkInterfaceID.NotFound",
		"i-0123456789abcdef0":      "InvalidInstanceID.NotFound",
		"subnet-0123456789abcdef0": "InvalidSubnetID.NotFound",
	}
	for id, code := range cases {
		_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{
			Resources: []string{aws.ToString(n.NetworkInterfaceId), id}, Tags: tags("k", "v")})
		requireAPIError(t, err, code, http.StatusBadRequest)
	}
}

// One call names at most 1000 resources.
func TestTagsResourceLimit(t *testing.T) {
	t.Parallel()
	c := suite.client()
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("eni-%017x", 0xec2c0f0000+i)
		}
		return out
	}
	_, err := c.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: ids(1001), Tags: tags("k", "v")})
	requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	_, err = c.DeleteTags(t.Context(), &ec2.DeleteTagsInput{Resources: ids(1001), Tags: tags("k", "v")})
	requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	// 1000 is within the limit: these IDs fail only because they do not exist.
	_, err = c.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: ids(1000), Tags: tags("k", "v")})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", http.StatusBadRequest)
}

func manyTags(prefix string, n int) []types.Tag {
	var kv []string
	for i := range n {
		kv = append(kv, fmt.Sprintf("%s%02d", prefix, i), "v")
	}
	return tags(kv...)
}

// A resource carries at most 50 tags.
func TestTagsPerResourceLimit(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	id := aws.ToString(n.NetworkInterfaceId)
	createTags := func(ts []types.Tag) error {
		_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: ts})
		return err
	}

	noErr(t, createTags(manyTags("k", 45)), "45 tags")
	noErr(t, createTags(manyTags("j", 5)), "5 more tags, 50 in all")
	requireAPIError(t, createTags(tags("one-more", "v")), "TagLimitExceeded", http.StatusBadRequest)
	noErr(t, createTags(tags("k00", "overwritten")), "overwriting a tag of a resource with 50")
	if got := len(w.tagsOf(id)); got != 50 {
		t.Errorf("resource has %d tags, want 50", got)
	}

	fresh := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{aws.ToString(fresh.NetworkInterfaceId)}, Tags: manyTags("k", 51)})
	requireAPIError(t, err, "TagLimitExceeded", http.StatusBadRequest)
	if got := w.tagsOf(aws.ToString(fresh.NetworkInterfaceId)); len(got) != 0 {
		t.Errorf("a refused CreateTags left tags behind: %v", got)
	}

	_, err = w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface, Tags: manyTags("k", 51)}}})
	requireAPIError(t, err, "TagLimitExceeded", http.StatusBadRequest)
}

// Keys up to 127 and values up to 256 characters (not bytes); keys starting
// with aws: (any case) are reserved.
func TestTagKeyAndValueRules(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	cases := []struct {
		name, key, value string
		code             string // "" when accepted
	}{
		{"key of 127", strings.Repeat("k", 127), "v", ""},
		{"key of 128", strings.Repeat("k", 128), "v", "InvalidParameterValue"},
		{"key of 127 two-byte characters", strings.Repeat("é", 127), "v", ""},
		{"value of 256", "long-value", strings.Repeat("v", 256), ""},
		{"value of 257", "too-long-value", strings.Repeat("v", 257), "InvalidParameterValue"},
		{"empty value", "empty", "", ""},
		{"aws: prefix", "aws:owner", "v", "InvalidParameterValue"},
		{"AWS: prefix", "AWS:owner", "v", "InvalidParameterValue"},
		{"aws in the middle is fine", "team:aws:x", "v", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags(c.key, c.value)})
			if c.code == "" {
				noErr(t, err, "CreateTags %s", c.name)
				if got, ok := w.in(t).tagsOf(id)[c.key]; !ok || got != c.value {
					t.Errorf("tag %q is %q (present %v), want %q", c.key, got, ok, c.value)
				}
				return
			}
			requireAPIError(t, err, c.code, http.StatusBadRequest)
		})
	}
	t.Run("aws: in DeleteTags", func(t *testing.T) {
		_, err := w.ec2.DeleteTags(t.Context(), &ec2.DeleteTagsInput{Resources: []string{id}, Tags: []types.Tag{{Key: aws.String("aws:owner")}}})
		requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	})
	t.Run("aws: in RunInstances TagSpecifications", func(t *testing.T) {
		for _, rt := range []types.ResourceType{types.ResourceTypeInstance, types.ResourceTypeNetworkInterface} {
			out, err := w.ec2.RunInstances(t.Context(), &ec2.RunInstancesInput{ImageId: aws.String(imageID()), InstanceType: types.InstanceType(smallType),
				MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(w.a.id), TagSpecifications: tagSpec(rt, "aws:owner", "v")})
			if err == nil {
				w.ownInstances(aws.ToString(out.Instances[0].InstanceId))
				t.Fatalf("RunInstances accepts the reserved key aws:owner in a %s TagSpecification", rt)
			}
			requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
		}
	})
	t.Run("aws: in TagSpecifications", func(t *testing.T) {
		_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
			TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "aws:owner", "v")})
		requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	})
}

// DeleteTags with a value deletes the tag only when the value matches
// (an empty value matches only an empty value); with a key alone it
// deletes whatever the value.
func TestDeleteTagsValueMatching(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "a", "1", "b", "2", "c", "", "d", "4")}).NetworkInterfaceId)
	del := func(key string, value *string) {
		t.Helper()
		_, err := w.ec2.DeleteTags(t.Context(), &ec2.DeleteTagsInput{Resources: []string{id}, Tags: []types.Tag{{Key: aws.String(key), Value: value}}})
		noErr(t, err, "DeleteTags %s", key)
	}
	del("a", aws.String("other")) // wrong value: kept
	del("b", nil)                 // key only: deleted
	del("c", aws.String(""))      // empty value matches the empty value: deleted
	del("d", aws.String(""))      // empty value does not match "4": kept
	del("missing", nil)           // deleting an absent tag is not an error
	if got, want := w.tagsOf(id), map[string]string{"a": "1", "d": "4"}; !maps.Equal(got, want) {
		t.Fatalf("tags after DeleteTags are %v, want %v", got, want)
	}
	del("a", aws.String("1")) // matching value: deleted
	if got, want := w.tagsOf(id), map[string]string{"d": "4"}; !maps.Equal(got, want) {
		t.Fatalf("tags after DeleteTags a=1 are %v, want %v", got, want)
	}

	// No tags at all: every user tag goes.
	_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags("e", "5", "f", "6")})
	noErr(t, err, "CreateTags")
	_, err = w.ec2.DeleteTags(t.Context(), &ec2.DeleteTagsInput{Resources: []string{id}})
	noErr(t, err, "DeleteTags without tags")
	if got := w.tagsOf(id); len(got) != 0 {
		t.Fatalf("tags after DeleteTags without Tags are %v, want none", got)
	}
}

// DescribeTags pages through MaxResults/NextToken, every tag once.
func TestDescribeTagsPagination(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id, w.a.id}, Tags: manyTags("p", 7)})
	noErr(t, err, "CreateTags")
	seen := map[string]int{}
	pages := 0
	p := ec2.NewDescribeTagsPaginator(w.ec2, &ec2.DescribeTagsInput{MaxResults: aws.Int32(5),
		Filters: []types.Filter{filter("resource-id", id, w.a.id)}})
	for p.HasMorePages() {
		out, err := p.NextPage(t.Context())
		noErr(t, err, "DescribeTags page %d", pages+1)
		pages++
		if len(out.Tags) > 5 {
			t.Errorf("page of %d tags, MaxResults 5", len(out.Tags))
		}
		for _, d := range out.Tags {
			seen[aws.ToString(d.ResourceId)+"/"+aws.ToString(d.Key)]++
		}
	}
	// 7 tags on each, plus the subnet's Name.
	if len(seen) != 15 || pages < 3 {
		t.Errorf("%d distinct tags in %d pages, want 15 in at least 3", len(seen), pages)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s returned %d times", k, n)
		}
	}
}

// DescribeTags filters by resource-id, resource-type, key and value.
func TestDescribeTagsFilters(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	e1 := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Owner", "x", "Stage", "prod")}).NetworkInterfaceId)
	e2 := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Owner", "y")}).NetworkInterfaceId)
	scope := filter("resource-id", e1, e2, w.a.id)

	cases := []struct {
		name    string
		filters []types.Filter
		want    []string // resource-id/key=value
	}{
		{"resource-id", []types.Filter{filter("resource-id", e1)}, []string{e1 + "/Owner=x", e1 + "/Stage=prod"}},
		{"key", []types.Filter{scope, filter("key", "Owner")}, []string{e1 + "/Owner=x", e2 + "/Owner=y"}},
		{"value", []types.Filter{scope, filter("value", "y", "prod")}, []string{e1 + "/Stage=prod", e2 + "/Owner=y"}},
		{"resource-type", []types.Filter{scope, filter("resource-type", "subnet")}, []string{w.a.id + "/Name=" + w.name + "-a"}},
		{"key wildcard", []types.Filter{scope, filter("key", "St*")}, []string{e1 + "/Stage=prod"}},
		{"key and value", []types.Filter{scope, filter("key", "Owner"), filter("value", "x")}, []string{e1 + "/Owner=x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := w.ec2.DescribeTags(t.Context(), &ec2.DescribeTagsInput{Filters: c.filters})
			noErr(t, err, "DescribeTags %s", describeFilters(c.filters))
			var got []string
			for _, d := range out.Tags {
				got = append(got, aws.ToString(d.ResourceId)+"/"+aws.ToString(d.Key)+"="+aws.ToString(d.Value))
			}
			slices.Sort(got)
			if want := sorted(c.want...); !slices.Equal(got, want) {
				t.Errorf("DescribeTags %s = %v, want %v", describeFilters(c.filters), got, want)
			}
		})
	}
}
