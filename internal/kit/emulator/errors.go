package emulator

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// apiError is an EC2 error response: a code, a message and an HTTP status.
type apiError struct {
	Code    string
	Message string
	Status  int
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// apiErr builds an error with the HTTP status EC2 uses for the code.
func apiErr(code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...), Status: statusFor(code)}
}

func statusFor(code string) int {
	switch code {
	case "RequestLimitExceeded", "Unavailable", "ServiceUnavailable":
		return http.StatusServiceUnavailable
	case "InternalError", "InternalFailure":
		return http.StatusInternalServerError
	case "UnauthorizedOperation", "AuthFailure", "Blocked":
		return http.StatusForbidden
	case "DryRunOperation":
		return http.StatusPreconditionFailed
	case "RequestTimeout":
		return http.StatusGatewayTimeout
	default:
		return http.StatusBadRequest
	}
}

// idKind is how EC2 names one kind of ID in its errors. The codes are
// not derivable from one another (InvalidGroupId.Malformed but
// InvalidGroup.NotFound), so each kind lists both.
type idKind struct {
	prefix        string // before the "-"
	notFound      string // code for an ID that names nothing
	noun          string // in the NotFound message
	malformedCode string // code for a badly shaped ID
}

// idKinds are the kinds of ID the emulator knows; "eni-attach" comes
// before "eni" so that the longer prefix wins.
func idKinds() []idKind {
	return []idKind{
		{"eni-attach", "InvalidAttachmentID.NotFound", "attachment ID", "InvalidAttachmentID.Malformed"},
		{"eni", "InvalidNetworkInterfaceID.NotFound", "networkInterface ID", "InvalidNetworkInterfaceID.Malformed"},
		{"i", "InvalidInstanceID.NotFound", "instance ID", "InvalidInstanceID.Malformed"},
		{"subnet", "InvalidSubnetID.NotFound", "subnet ID", "InvalidSubnetID.Malformed"},
		{"vpc", "InvalidVpcID.NotFound", "vpc ID", "InvalidVpcID.Malformed"},
		{"sg", "InvalidGroup.NotFound", "security group", "InvalidGroupId.Malformed"},
		{"scr", "InvalidSubnetCidrReservationID.NotFound", "subnet CIDR reservation ID", "InvalidSubnetCidrReservationID.Malformed"},
	}
}

// idKindOf returns the kind of the IDs with prefix; ok is false for a
// prefix the emulator does not know.
func idKindOf(prefix string) (idKind, bool) {
	i := slices.IndexFunc(idKinds(), func(k idKind) bool { return k.prefix == prefix })
	if i < 0 {
		return idKind{}, false
	}
	return idKinds()[i], true
}

// notFound is EC2's error for an ID of the kind prefix that names nothing.
func notFound(prefix, id string) *apiError {
	k, ok := idKindOf(prefix)
	if !ok {
		return invalidID(id)
	}
	return apiErr(k.notFound, "The %s '%s' does not exist", k.noun, id)
}

// notFoundByID picks the NotFound error from the shape of the ID.
func notFoundByID(id string) *apiError {
	for _, k := range idKinds() {
		if strings.HasPrefix(id, k.prefix+"-") && len(id) > len(k.prefix)+1 {
			return notFound(k.prefix, id)
		}
	}
	return invalidID(id)
}

func invalidID(id string) *apiError { return apiErr("InvalidID", "The ID '%s' is not valid", id) }

// lookup finds the resource an ID of the kind prefix names, answering a
// malformed or unknown ID as EC2 does.
func lookup[T any](resources map[string]T, prefix, id string) (T, *apiError) {
	var zero T
	if err := checkID(prefix, id); err != nil {
		return zero, err
	}
	r, ok := resources[id]
	if !ok {
		return zero, notFound(prefix, id)
	}
	return r, nil
}

// checkID verifies the shape of an ID: prefix-hex, 8 or 17 hex digits.
func checkID(prefix, id string) *apiError {
	code := "InvalidID"
	if k, ok := idKindOf(prefix); ok {
		code = k.malformedCode
	}
	want := prefix + "-"
	if len(id) <= len(want) || id[:len(want)] != want {
		return apiErr(code, "Invalid id: \"%s\" (expecting \"%s-...\")", id, prefix)
	}
	hex := id[len(want):]
	if len(hex) != 8 && len(hex) != 17 {
		return apiErr(code, "Invalid id: \"%s\"", id)
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return apiErr(code, "Invalid id: \"%s\"", id)
		}
	}
	return nil
}
