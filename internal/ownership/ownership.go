// Package ownership proves that an ENI is one the operator created or
// adopted. Tags are only evidence: anyone allowed ec2:CreateTags can copy
// an ENI's complete tag set onto an interface the operator never made. A
// proof is an HMAC-SHA256, keyed by a secret only the operator reads, over
// the ownership tags the operator acts on and what makes them one ENI's:
//
//   - v1 (an ENI that exists: adoption, earlier versions) binds the ENI's
//     ID, which EC2 assigns and no one can choose, so a copy carries a
//     proof of another ENI's ID;
//   - v2 (a birth proof, written with CreateNetworkInterface, before the
//     ID exists) binds a random nonce and the subnet. The caller records
//     the nonce ahead of the create where only the operator writes, and
//     binds it to the one ENI that shows it: a copy shows a nonce whose
//     ENI is known, or shares it with the genuine ENI.
//
// No principal without the key can make a new proof of either kind.
package ownership

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The version prefixes every proof and is part of what is signed, so a
// proof of one scheme can never verify as another.
const (
	version      = "v1"
	birthVersion = "v2"
)

// MinKeyBytes is the shortest key accepted: HMAC-SHA256's block of
// security is 32 bytes.
const MinKeyBytes = 32

var keyIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Claim is what a proof binds: the ENI and the ownership tags the
// controller and the collector act on. Changing any of them on the ENI
// voids its proof.
type Claim struct {
	ENI, Cluster, NodeENI, NodeENIUID, Node, Instance string
	DeviceIndex, DeviceIndexBase, CreatedAt           string
}

// encode joins the claim's fields length-prefixed, so no field's content
// can imitate a boundary between two fields.
func (c Claim) encode() []byte {
	return encode("eni-operator.io/proof/"+version, c.ENI, c.Cluster, c.NodeENI, c.NodeENIUID, c.Node, c.Instance,
		c.DeviceIndex, c.DeviceIndexBase, c.CreatedAt)
}

// BirthClaim is what a birth proof binds: a nonce the operator recorded
// before the create, the subnet EC2 shows the ENI in (a copy onto an ENI
// of another subnet fails) and the ownership tags.
type BirthClaim struct {
	Nonce, Subnet, Cluster, NodeENI, NodeENIUID, Node, Instance string
	DeviceIndex, DeviceIndexBase, CreatedAt                     string
}

func (c BirthClaim) encode() []byte {
	return encode("eni-operator.io/birth-proof/"+birthVersion, c.Nonce, c.Subnet, c.Cluster, c.NodeENI, c.NodeENIUID,
		c.Node, c.Instance, c.DeviceIndex, c.DeviceIndexBase, c.CreatedAt)
}

// IsBirthProof reports whether a proof is of the birth scheme (v2).
func IsBirthProof(proof string) bool { return strings.HasPrefix(proof, birthVersion+".") }

// NewNonce returns a birth proof's nonce: 128 random bits, 22 characters
// of URL-safe base64 (a valid tag value).
func NewNonce() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ReservationClaim is what a subnet CIDR reservation's proof binds. EC2
// lets no two reservations of a subnet overlap, so the subnet and the
// CIDR name one reservation, and the proof can be written with its
// creation: a copy onto another reservation names another CIDR.
type ReservationClaim struct {
	Cluster, NodeENIUID, Subnet, CIDR string
}

func (c ReservationClaim) encode() []byte {
	return encode("eni-operator.io/reservation-proof/"+version, c.Cluster, c.NodeENIUID, c.Subnet, c.CIDR)
}

func encode(fields ...string) []byte {
	var b []byte
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// KeyRing holds the keys proofs are signed and verified with. The key
// whose ID sorts last signs; every key verifies, so a key added for
// rotation signs from then on while ENIs signed with the older ones stay
// proven until they are signed again.
type KeyRing struct {
	ids  []string // sorted
	keys map[string][]byte
}

// NewKeyRing checks and copies keys (ID -> secret bytes): at least one,
// IDs of lowercase letters, digits and '-' (at most 32), each key at
// least MinKeyBytes long.
func NewKeyRing(keys map[string][]byte) (*KeyRing, error) {
	if len(keys) == 0 {
		return nil, errors.New("the key ring is empty: it needs at least one key")
	}
	k := &KeyRing{keys: make(map[string][]byte, len(keys))}
	for id, v := range keys {
		if !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("key ID %q: use 1-32 lowercase letters, digits and '-', starting with a letter or digit", id)
		}
		if len(v) < MinKeyBytes {
			return nil, fmt.Errorf("key %q has %d bytes: at least %d random bytes are needed", id, len(v), MinKeyBytes)
		}
		k.keys[id] = slices.Clone(v)
		k.ids = append(k.ids, id)
	}
	slices.Sort(k.ids)
	return k, nil
}

// Current is the ID of the key that signs.
func (k *KeyRing) Current() string { return k.ids[len(k.ids)-1] }

// IDs are the ring's key IDs, sorted.
func (k *KeyRing) IDs() []string { return slices.Clone(k.ids) }

// Sign returns the proof of c under the current key: "v1.<key ID>.<MAC>".
func (k *KeyRing) Sign(c Claim) string { return k.sign(version, c.encode()) }

// SignBirth returns the birth proof of c: "v2.<key ID>.<MAC>".
func (k *KeyRing) SignBirth(c BirthClaim) string { return k.sign(birthVersion, c.encode()) }

// SignReservation returns the proof of a subnet CIDR reservation.
func (k *KeyRing) SignReservation(c ReservationClaim) string { return k.sign(version, c.encode()) }

func (k *KeyRing) sign(v string, msg []byte) string {
	id := k.Current()
	return v + "." + id + "." + base64.RawURLEncoding.EncodeToString(k.mac(id, msg))
}

func (k *KeyRing) mac(id string, msg []byte) []byte {
	m := hmac.New(sha256.New, k.keys[id])
	m.Write(msg)
	return m.Sum(nil)
}

// Errors of Verify.
var (
	ErrMalformed  = errors.New("not a proof of this operator's format")
	ErrUnknownKey = errors.New("signed with a key that is not in the key ring")
	ErrMismatch   = errors.New("does not match this ENI and its ownership tags (copied from another ENI, or a tag was changed)")
)

// Verify checks proof against c and returns the ID of the key that
// signed it.
func (k *KeyRing) Verify(c Claim, proof string) (keyID string, err error) {
	return k.verify(version, c.encode(), proof)
}

// VerifyBirth checks a birth proof against c.
func (k *KeyRing) VerifyBirth(c BirthClaim, proof string) (keyID string, err error) {
	return k.verify(birthVersion, c.encode(), proof)
}

// VerifyReservation checks a subnet CIDR reservation's proof.
func (k *KeyRing) VerifyReservation(c ReservationClaim, proof string) (keyID string, err error) {
	return k.verify(version, c.encode(), proof)
}

func (k *KeyRing) verify(want string, msg []byte, proof string) (keyID string, err error) {
	v, rest, ok := strings.Cut(proof, ".")
	if !ok || v != want {
		return "", ErrMalformed
	}
	id, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return "", ErrMalformed
	}
	got, derr := base64.RawURLEncoding.DecodeString(sig)
	if derr != nil || len(got) != sha256.Size {
		return "", ErrMalformed
	}
	if _, known := k.keys[id]; !known {
		return id, ErrUnknownKey
	}
	if !hmac.Equal(got, k.mac(id, msg)) {
		return id, ErrMismatch
	}
	return id, nil
}

// NewKey makes a key for a ring: 32 random bytes, with an ID from the
// time (UTC) so that a key made later sorts later and signs.
func NewKey(now time.Time) (id string, key []byte, err error) {
	key = make([]byte, MinKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return "", nil, err
	}
	return "k" + now.UTC().Format("20060102t150405"), key, nil
}
