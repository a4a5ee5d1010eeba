package emulator

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Long outages and credentials: an emulator that is "down" drops every
// EC2 connection unanswered, as an unreachable endpoint does; and a
// minimal STS (AssumeRoleWithWebIdentity, what IRSA's web-identity token
// file leads the SDK's standard chain to) issues temporary credentials
// that every EC2 call can be required to carry, unexpired.

// Auth is the emulator's credential checking (Config.Auth).
type Auth struct {
	// Require makes every EC2 call need an access key ID this emulator's
	// STS issued and that has not expired; others are answered
	// AuthFailure (403). Off, any credentials are accepted.
	Require bool `json:"require,omitempty"`
	// Lifetime of the credentials STS issues (default 1h; AWS's minimum
	// is 15 minutes, tests shrink it).
	Lifetime Duration `json:"lifetime,omitempty"`
	// Tokens are the web-identity tokens AssumeRoleWithWebIdentity
	// accepts; any other is answered InvalidIdentityToken. Empty accepts
	// any non-empty token.
	Tokens []string `json:"tokens,omitempty"`
}

// authState is the credentials the emulated STS issued.
type authState struct {
	// issued maps an access key ID to when it expires.
	issued map[string]time.Time
	seq    int
}

// stsNamespace is the XML namespace of STS responses.
const stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"

type stsCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type assumeRoleWithWebIdentityResponse struct {
	XMLName xml.Name `xml:"AssumeRoleWithWebIdentityResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Result  struct {
		Credentials     stsCredentials `xml:"Credentials"`
		AssumedRoleUser struct {
			Arn           string `xml:"Arn"`
			AssumedRoleID string `xml:"AssumedRoleId"`
		} `xml:"AssumedRoleUser"`
		SubjectFromWebIdentityToken string `xml:"SubjectFromWebIdentityToken"`
	} `xml:"AssumeRoleWithWebIdentityResult"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

type stsErrorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

// serveSTS answers AssumeRoleWithWebIdentity with credentials valid for
// the configured lifetime.
func (e *Emulator) serveSTS(w http.ResponseWriter, p params, requestID string) {
	token, role := p.get("WebIdentityToken"), p.get("RoleArn")
	e.cfgMu.Lock()
	accepted := token != "" && role != "" && (len(e.cfg.auth.Tokens) == 0 || slices.Contains(e.cfg.auth.Tokens, token))
	var creds stsCredentials
	if accepted {
		lifetime := e.cfg.auth.Lifetime.Duration
		if lifetime <= 0 {
			lifetime = time.Hour
		}
		e.auth.seq++
		// STS reports whole seconds: round up, so the expiry reported is
		// the one enforced.
		expires := time.Now().Add(lifetime + time.Second - 1).Truncate(time.Second)
		creds = stsCredentials{AccessKeyID: fmt.Sprintf("ASIAEMULATOR%08d", e.auth.seq), SecretAccessKey: "emulated-secret-" + strconv.Itoa(e.auth.seq),
			SessionToken: "emulated-session-" + strconv.Itoa(e.auth.seq), Expiration: expires.UTC().Format(time.RFC3339)}
		e.auth.issued[creds.AccessKeyID] = expires
	}
	e.cfgMu.Unlock()
	e.countCall("AssumeRoleWithWebIdentity", params{}, "")
	var body bytes.Buffer
	body.WriteString(xml.Header)
	status := http.StatusOK
	if !accepted {
		e.countError("AssumeRoleWithWebIdentity", "InvalidIdentityToken")
		status = http.StatusBadRequest
		r := stsErrorResponse{Xmlns: stsNamespace, RequestID: requestID}
		r.Error.Type, r.Error.Code = "Sender", "InvalidIdentityToken"
		r.Error.Message = "The web identity token (or the role ARN) was not accepted (emulated STS)"
		_ = xml.NewEncoder(&body).Encode(r)
	} else {
		r := assumeRoleWithWebIdentityResponse{Xmlns: stsNamespace, RequestID: requestID}
		r.Result.Credentials = creds
		r.Result.AssumedRoleUser.Arn = role + "/" + p.get("RoleSessionName")
		r.Result.AssumedRoleUser.AssumedRoleID = "AROAEMULATOR:" + p.get("RoleSessionName")
		r.Result.SubjectFromWebIdentityToken = "system:serviceaccount:emulated"
		_ = xml.NewEncoder(&body).Encode(r)
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(body.Bytes())
}

// sigV4Credential finds the access key ID of a SigV4-signed request.
var sigV4Credential = regexp.MustCompile(`Credential=([^/,\s]+)/`)

// checkCredentials refuses an EC2 call without unexpired credentials
// this emulator issued, when Auth.Require is on.
func (e *Emulator) checkCredentials(r *http.Request) *apiError {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	if !e.cfg.auth.Require {
		return nil
	}
	m := sigV4Credential.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return apiErr("AuthFailure", "AWS was not able to validate the provided access credentials (no SigV4 credential)")
	}
	expires, ok := e.auth.issued[m[1]]
	switch {
	case !ok:
		return apiErr("AuthFailure", "AWS was not able to validate the provided access credentials (access key %s unknown)", m[1])
	case time.Now().After(expires):
		return apiErr("AuthFailure", "AWS was not able to validate the provided access credentials (access key %s expired at %s)",
			m[1], expires.UTC().Format(time.RFC3339))
	}
	return nil
}

// drop closes the connection of a request unanswered, as an unreachable
// EC2 endpoint would leave the client without an answer. It reports
// false when the server cannot hand the connection over.
func drop(w http.ResponseWriter) bool {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return false
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return false
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset, not an orderly close
	}
	_ = conn.Close()
	return true
}

// down reports whether EC2 is configured unreachable.
func (e *Emulator) down() bool {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	return e.cfg.down
}
