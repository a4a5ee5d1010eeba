package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// pki is a ControlPlane's certificates, made once and kept in its
// directory so a restarted kube-apiserver serves the same certificate
// and trusts the same client CA.
type pki struct {
	caPEM []byte
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	files struct{ ca, servingCert, servingKey, saKey string }

	mu      sync.Mutex
	clients map[string][2][]byte
	serial  int64
}

func newPKI(dir string) (*pki, error) {
	p := &pki{clients: map[string][2][]byte{}, serial: 1}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "eni-operator test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.caKey, p.caPEM = key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	dir = filepath.Join(dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p.files.ca, p.files.servingCert = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "apiserver.crt")
	p.files.servingKey, p.files.saKey = filepath.Join(dir, "apiserver.key"), filepath.Join(dir, "sa.key")
	crt, skey, err := p.issue(&x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return nil, err
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sa)})
	for path, b := range map[string][]byte{p.files.ca: p.caPEM, p.files.servingCert: crt, p.files.servingKey: skey, p.files.saKey: saPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// client returns the PEM certificate and key of user name in group
// system:masters, signed by the CA the API server trusts.
func (p *pki) client(name string) (crt, key []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[name]; ok {
		return c[0], c[1]
	}
	crt, key, err := p.issue(&x509.Certificate{Subject: pkix.Name{CommonName: name, Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		panic(err) // the CA was made by newPKI; signing with it cannot fail
	}
	p.clients[name] = [2][]byte{crt, key}
	return crt, key
}

// issue signs tmpl with the CA and returns the certificate and a new key
// in PEM.
func (p *pki) issue(tmpl *x509.Certificate) (crt, key []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &k.PublicKey, p.caKey)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}
