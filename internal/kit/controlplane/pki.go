package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a control plane's certificate authority and service-account key
// pair, kept in a directory (ca.crt, ca.key, sa.key, sa.pub) so that a
// restarted kube-apiserver serves the same certificate and trusts the
// same clients.
type PKI struct {
	dir    string
	caPEM  []byte
	caCert *x509.Certificate
	caKey  crypto.Signer
}

// NewPKI makes a CA and a service-account key pair in dir.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "eni-operator control plane CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	p := &PKI{dir: dir, caKey: key, caPEM: pemBytes("CERTIFICATE", der)}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.Path("ca.crt"), p.caPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeKey(p.Path("ca.key"), key); err != nil {
		return nil, err
	}
	// Service-account tokens are signed with RSA, as kubeadm does.
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := writeKey(p.Path("sa.key"), sa); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return nil, err
	}
	return p, os.WriteFile(p.Path("sa.pub"), pemBytes("PUBLIC KEY", pub), 0o600)
}

// Path is the path of file in the PKI's directory (ca.crt, <name>.key).
func (p *PKI) Path(file string) string { return filepath.Join(p.dir, file) }

// CA is the CA's certificate in PEM.
func (p *PKI) CA() []byte { return p.caPEM }

// Issue writes <name>.crt and <name>.key: a client certificate for
// commonName in groups, and a serving one too when hosts are given.
func (p *PKI) Issue(name, commonName string, groups []string, hosts ...string) error {
	crt, key, err := p.Cert(commonName, groups, hosts...)
	if err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	if err := os.WriteFile(p.Path(name+".crt"), crt, 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.Path(name+".key"), key, 0o600)
}

// Cert is Issue in memory: the certificate and its key in PEM.
func (p *PKI) Cert(commonName string, groups []string, hosts ...string) (crt, key []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: groups},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(hosts) > 0 {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, k.Public(), p.caKey)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pemBytes("CERTIFICATE", der), pemBytes("PRIVATE KEY", kb), nil
}

func writeKey(path string, key any) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pemBytes("PRIVATE KEY", der), 0o600)
}

func pemBytes(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
