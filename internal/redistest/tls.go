package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/launch"
)

// CA is a throwaway certificate authority made for one test: an ECDSA
// P-256 key and a self-signed certificate, written as PEM files in a
// temporary directory.
type CA struct {
	// CertFile is the CA certificate (PEM), to trust.
	CertFile string

	dir  string
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	n    int64
}

// KeyPair is a certificate and its key as PEM files.
type KeyPair struct {
	CertFile, KeyFile string
}

// NewCA makes a CA valid for an hour.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("ca key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "leasegate test CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("ca cert: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("ca parse: %v", err)
	}
	ca := &CA{dir: t.TempDir(), key: key, cert: cert, n: 1}
	ca.CertFile = filepath.Join(ca.dir, "ca.crt")
	writePEM(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Issue signs a leaf certificate for name, valid for 127.0.0.1 and
// localhost, usable both as a server and as a client certificate.
func (ca *CA) Issue(t testing.TB, name string) KeyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("%s key: %v", name, err)
	}
	ca.n++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.n),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost", name},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("%s cert: %v", name, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("%s key: %v", name, err)
	}
	kp := KeyPair{
		CertFile: filepath.Join(ca.dir, name+".crt"),
		KeyFile:  filepath.Join(ca.dir, name+".key"),
	}
	writePEM(t, kp.CertFile, "CERTIFICATE", der)
	writePEM(t, kp.KeyFile, "PRIVATE KEY", kder)
	return kp
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// StartTLS starts a redis-server that speaks only TLS (the plain port is
// off) on a free port, with the server certificate kp signed by ca. Client
// certificates are required only when args say so ("--tls-auth-clients",
// "yes"); by default they are optional. Addr and URL name the TLS port
// (URL with rediss://); Client does not work on it.
func StartTLS(t testing.TB, ca *CA, kp KeyPair, args ...string) *Server {
	t.Helper()
	all := []string{
		"--tls-cert-file", kp.CertFile,
		"--tls-key-file", kp.KeyFile,
		"--tls-ca-cert-file", ca.CertFile,
		"--tls-auth-clients", "optional",
	}
	s := newServer(t, launch.RedisSpec{Bin: Binary(t), Dir: t.TempDir(), Args: append(all, args...), TLS: true})
	s.startOnFreePort()
	t.Cleanup(s.Stop)
	return s
}
