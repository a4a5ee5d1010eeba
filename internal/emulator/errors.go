package emulator

import (
	"fmt"
	"net/http"
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

func notFound(kind, id string) *apiError {
	switch kind {
	case "eni":
		return apiErr("InvalidNetworkInterfaceID.NotFound", "The networkInterface ID '%s' does not exist", id)
	case "instance":
		return apiErr("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	case "subnet":
		return apiErr("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
	case "vpc":
		return apiErr("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", id)
	case "sg":
		return apiErr("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	case "attachment":
		return apiErr("InvalidAttachmentID.NotFound", "The attachment ID '%s' does not exist", id)
	}
	return apiErr("InvalidID", "The ID '%s' is not valid", id)
}

// malformedCode is the error code EC2 gives for a badly shaped ID.
func malformedCode(prefix string) string {
	switch prefix {
	case "eni":
		return "InvalidNetworkInterfaceID.Malformed"
	case "i":
		return "InvalidInstanceID.Malformed"
	case "subnet":
		return "InvalidSubnetID.Malformed"
	case "vpc":
		return "InvalidVpcID.Malformed"
	case "sg":
		return "InvalidGroupId.Malformed"
	case "eni-attach":
		return "InvalidAttachmentID.Malformed"
	}
	return "InvalidID"
}

// checkID verifies the shape of an ID: prefix-hex, 8 or 17 hex digits.
func checkID(prefix, id string) *apiError {
	code := malformedCode(prefix)
	want := prefix + "-"
	if len(id) <= len(want) || id[:len(want)] != want {
		return apiErr(code, "Invalid id: \"%s\" (expecting \"%s-...\")", id, prefix)
	}
	hex := id[len(want):]
	if len(hex) != 8 && len(hex) != 17 {
		return apiErr(code, "Invalid id: \"%s\"", id)
	}
	for _, c := range hex {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return apiErr(code, "Invalid id: \"%s\"", id)
		}
	}
	return nil
}
