package emulator

import "strconv"

// DescribeNetworkInterfaceAttribute answers one attribute of an ENI per
// call, in the element EC2 names after it; the others are left out.

type xAttributeValue struct {
	Value string `xml:"value"`
}

type describeNetworkInterfaceAttributeResponse struct {
	respMeta
	NetworkInterfaceID string           `xml:"networkInterfaceId"`
	Description        *xAttributeValue `xml:"description,omitempty"`
	SourceDestCheck    *xAttributeValue `xml:"sourceDestCheck,omitempty"`
	Groups             *[]xGroup        `xml:"groupSet>item,omitempty"`
	Attachment         *xAttachment     `xml:"attachment,omitempty"`
	// AssociatePublicIPAddress is always false: the emulator gives ENIs no
	// public addresses.
	AssociatePublicIPAddress *bool `xml:"associatePublicIpAddress,omitempty"`
}

func describeNetworkInterfaceAttribute(w *world, p params, _ callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	attr, err := p.required("Attribute")
	if err != nil {
		return nil, err
	}
	resp := &describeNetworkInterfaceAttributeResponse{NetworkInterfaceID: n.id}
	switch attr {
	case "description":
		resp.Description = &xAttributeValue{Value: n.description}
	case "sourceDestCheck":
		resp.SourceDestCheck = &xAttributeValue{Value: strconv.FormatBool(n.sourceDestCheck)}
	case "groupSet":
		g := w.xGroups(n.groups)
		resp.Groups = &g
	case "attachment":
		resp.Attachment = w.xAttachment(n.attachment)
	case "associatePublicIpAddress":
		f := false
		resp.AssociatePublicIPAddress = &f
	default:
		return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter attribute is invalid. Unknown attribute.", attr)
	}
	return resp, nil
}
