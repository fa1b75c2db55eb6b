// Command testenv runs a real kube-apiserver together with an embedded etcd in
// one process, listening only on 127.0.0.1. It is the control plane that the
// kube-dynamic-informer integration tests, benchmarks and demo run against.
//
// It generates (once per data dir) a CA, a serving certificate, a service
// account key pair and a static token file with one admin user (group
// system:masters) and two ordinary users with no permissions, and writes one
// kubeconfig per user. When /readyz answers ok it prints exactly one JSON line
// on stdout, for example:
//
//	{"ready":true,"server":"https://127.0.0.1:40123","dataDir":"...","kubeconfigs":{"admin":"...","alice":"...","bob":"..."},"pid":1234}
//
// The same JSON is written to <data-dir>/ready.json, and removed again on
// shutdown. SIGTERM or SIGINT stop it cleanly. Restarting on the same data dir
// (and port) brings back the same objects and resourceVersions.
//
// Two subcommands run clients of the same Kubernetes release, built from the
// same modules: `testenv kubectl ARGS...` is kubectl, and `testenv informers`
// runs client-go's dynamic shared informer against one or more servers and
// compares what they hold (see informers.go). The integration tests use both
// as clients of `kdi serve`.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// users are the identities written to the token file. The admin is in
// system:masters; the others are ordinary users with no role at all, for
// RBAC tests.
var users = []struct {
	name   string
	groups string
}{
	{"admin", "system:masters"},
	{"alice", ""},
	{"bob", ""},
}

// state is what a data dir remembers between runs so that a restart keeps the
// same addresses (and so the same kubeconfigs stay valid).
type state struct {
	Port     int `json:"port"`
	EtcdPort int `json:"etcdPort"`
	PeerPort int `json:"peerPort"`
}

// readyLine is the machine-readable line printed once the server is ready.
type readyLine struct {
	Ready       bool              `json:"ready"`
	Server      string            `json:"server"`
	DataDir     string            `json:"dataDir"`
	Kubeconfigs map[string]string `json:"kubeconfigs"`
	Pid         int               `json:"pid"`
	// Version is the Kubernetes release (set at build time by scripts/testenv).
	Version string `json:"version"`
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "kubectl":
			runKubectl(os.Args[2:])
			return
		case "informers":
			if err := runInformers(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "testenv informers: %v\n", err)
				os.Exit(1)
			}
			return
		}
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		dataDir           = flag.String("data-dir", "", "directory for etcd data, certificates, tokens and kubeconfigs; reusing it restarts with the same state (default: a new temporary directory, removed on exit)")
		port              = flag.Int("port", 0, "secure port of kube-apiserver on 127.0.0.1 (0: the port used last time in this data dir, else a free one)")
		compaction        = flag.Duration("etcd-compaction-interval", 5*time.Minute, "how often kube-apiserver compacts etcd; short values make old resourceVersions expire (410 Gone) quickly")
		featureGates      = flag.String("feature-gates", "", "passed to kube-apiserver as --feature-gates")
		logFile           = flag.String("log-file", "", "write kube-apiserver and etcd logs to this file instead of stderr")
		exitOnStdinClose  = flag.Bool("exit-on-stdin-close", false, "shut down when stdin reaches end of file (lets a parent process that dies take the control plane with it)")
		noFsync           = flag.Bool("etcd-unsafe-no-fsync", true, "skip fsync in etcd; a killed process loses nothing, only a machine crash could")
		readyTimeout      = flag.Duration("ready-timeout", 3*time.Minute, "give up when /readyz is not ok within this time")
		apiserverArgs     multiFlag
		verbosity         = flag.Int("v", 0, "kube-apiserver log verbosity")
		maxInflight       = flag.Int("max-requests-inflight", 3000, "kube-apiserver --max-requests-inflight")
		maxMutateInflight = flag.Int("max-mutating-requests-inflight", 1000, "kube-apiserver --max-mutating-requests-inflight")
	)
	flag.Var(&apiserverArgs, "apiserver-arg", "extra kube-apiserver flag, e.g. --apiserver-arg=--watch-cache-sizes=podtemplates#0 (repeatable)")
	flag.Parse()

	removeDataDir := false
	if *dataDir == "" {
		d, err := os.MkdirTemp("", "testenv-")
		if err != nil {
			return err
		}
		*dataDir = d
		removeDataDir = true
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	if removeDataDir {
		defer os.RemoveAll(dir)
	}

	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("opening log file: %w", err)
		}
		// klog and etcd's zap logger both write to the process's stderr.
		if err := redirectStderr(f); err != nil {
			return err
		}
	}

	st, err := loadState(dir)
	if err != nil {
		return err
	}
	if *port != 0 {
		if st.Port, err = usablePort(*port); err != nil {
			return err
		}
	} else {
		st.Port = rememberedOrFreePort(st.Port)
	}
	st.EtcdPort = rememberedOrFreePort(st.EtcdPort)
	st.PeerPort = rememberedOrFreePort(st.PeerPort)
	if err := saveJSON(filepath.Join(dir, "state.json"), st); err != nil {
		return err
	}

	pki, err := ensurePKI(dir)
	if err != nil {
		return fmt.Errorf("preparing certificates: %w", err)
	}
	tokens, err := ensureTokens(dir)
	if err != nil {
		return fmt.Errorf("preparing tokens: %w", err)
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", st.Port)
	kubeconfigs := map[string]string{}
	for _, u := range users {
		path := filepath.Join(dir, "kubeconfig-"+u.name+".yaml")
		if err := writeKubeconfig(path, server, pki.caPEM, u.name, tokens[u.name]); err != nil {
			return err
		}
		kubeconfigs[u.name] = path
	}

	etcd, err := startEtcd(dir, st, *noFsync)
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	defer etcd.Close()

	args := []string{
		"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", st.EtcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The endpoint reconciler refuses loopback addresses; nothing here
		// needs the kubernetes service endpoints.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(st.Port),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + pki.servingCert,
		"--tls-private-key-file=" + pki.servingKey,
		"--client-ca-file=" + pki.caCert,
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=" + server + "/",
		"--service-account-key-file=" + pki.saKey,
		"--service-account-signing-key-file=" + pki.saKey,
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
		"--etcd-compaction-interval=" + compaction.String(),
		"--max-requests-inflight=" + strconv.Itoa(*maxInflight),
		"--max-mutating-requests-inflight=" + strconv.Itoa(*maxMutateInflight),
		"--profiling=false",
		"--v=" + strconv.Itoa(*verbosity),
	}
	if *featureGates != "" {
		args = append(args, "--feature-gates="+*featureGates)
	}
	args = append(args, apiserverArgs...)

	// NewAPIServerCommand installs the SIGTERM/SIGINT handler: on a signal its
	// context is cancelled, the server shuts down and Execute returns.
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(args)
	apiserverDone := make(chan error, 1)
	go func() { apiserverDone <- cmd.Execute() }()

	if *exitOnStdinClose {
		go func() {
			_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
			p, _ := os.FindProcess(os.Getpid())
			_ = p.Signal(os.Interrupt)
		}()
	}

	ctx, cancel := context.WithTimeout(context.Background(), *readyTimeout)
	defer cancel()
	readyErr := make(chan error, 1)
	go func() { readyErr <- waitReady(ctx, server, pki.caPEM, tokens["admin"]) }()

	readyPath := filepath.Join(dir, "ready.json")
	select {
	case err := <-apiserverDone:
		return fmt.Errorf("kube-apiserver stopped before it was ready: %v", err)
	case err := <-etcd.Err():
		return fmt.Errorf("etcd failed: %v", err)
	case err := <-readyErr:
		if err != nil {
			return err
		}
	}
	line := readyLine{Ready: true, Server: server, DataDir: dir, Kubeconfigs: kubeconfigs, Pid: os.Getpid(), Version: version.Get().GitVersion}
	if err := saveJSON(readyPath, line); err != nil {
		return err
	}
	defer os.Remove(readyPath)
	out, _ := json.Marshal(line)
	fmt.Println(string(out))

	select {
	case err := <-apiserverDone:
		if err != nil {
			return fmt.Errorf("kube-apiserver: %v", err)
		}
		return nil
	case err := <-etcd.Err():
		return fmt.Errorf("etcd failed: %v", err)
	}
}

func loadState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("reading %s: %w", filepath.Join(dir, "state.json"), err)
	}
	return st, nil
}

func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// usablePort returns want when it is free on 127.0.0.1, a free port when want
// is 0, and an error when want is taken.
func usablePort(want int) (int, error) {
	if want != 0 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", want))
		if err == nil {
			l.Close()
			return want, nil
		}
		return 0, fmt.Errorf("port %d on 127.0.0.1 is not free: %w", want, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// rememberedOrFreePort keeps a port remembered from an earlier run when it is
// still free, and otherwise picks a free one.
func rememberedOrFreePort(remembered int) int {
	if remembered != 0 {
		if p, err := usablePort(remembered); err == nil {
			return p
		}
	}
	p, err := usablePort(0)
	if err != nil {
		return 0
	}
	return p
}

func startEtcd(dir string, st state, noFsync bool) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "testenv"
	cfg.Dir = filepath.Join(dir, "etcd")
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", st.EtcdPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", st.PeerPort)}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = noFsync
	cfg.QuotaBackendBytes = 8 << 30
	// kube-apiserver compacts by itself (--etcd-compaction-interval).
	cfg.AutoCompactionRetention = "0"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		e.Close()
		return nil, errors.New("etcd was not ready within 60s")
	}
}

func waitReady(ctx context.Context, server string, caPEM []byte, token string) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver /readyz not ok in time; last answer: %s", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type pkiFiles struct {
	caCert, servingCert, servingKey, saKey string
	caPEM                                  []byte
}

func ensurePKI(dir string) (pkiFiles, error) {
	pdir := filepath.Join(dir, "pki")
	p := pkiFiles{
		caCert:      filepath.Join(pdir, "ca.crt"),
		servingCert: filepath.Join(pdir, "serving.crt"),
		servingKey:  filepath.Join(pdir, "serving.key"),
		saKey:       filepath.Join(pdir, "service-account.key"),
	}
	if b, err := os.ReadFile(p.caCert); err == nil {
		if _, err := os.Stat(p.saKey); err == nil {
			p.caPEM = b
			return p, nil
		}
	}
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		return p, err
	}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "testenv-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return p, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return p, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, err
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := map[string][]byte{
		p.servingCert:                 pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		p.servingKey:                  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(srvKey)}),
		p.saKey:                       pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		filepath.Join(pdir, "ca.key"): pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(caKey)}),
		p.caCert:                      p.caPEM, // written last: its presence marks a complete set
	}
	for _, name := range []string{p.servingCert, p.servingKey, p.saKey, filepath.Join(pdir, "ca.key"), p.caCert} {
		if err := os.WriteFile(name, files[name], 0o600); err != nil {
			return p, err
		}
	}
	return p, nil
}

// ensureTokens returns each user's bearer token, creating tokens.csv (the
// kube-apiserver --token-auth-file format) on first use.
func ensureTokens(dir string) (map[string]string, error) {
	path := filepath.Join(dir, "tokens.csv")
	tokens := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			fields := strings.SplitN(line, ",", 3)
			if len(fields) >= 2 {
				tokens[fields[1]] = fields[0]
			}
		}
		if len(tokens) == len(users) {
			return tokens, nil
		}
	}
	var sb strings.Builder
	for _, u := range users {
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		tok := hex.EncodeToString(raw)
		tokens[u.name] = tok
		fmt.Fprintf(&sb, "%s,%s,%s-uid", tok, u.name, u.name)
		if u.groups != "" {
			fmt.Fprintf(&sb, ",%q", u.groups)
		}
		sb.WriteString("\n")
	}
	return tokens, os.WriteFile(path, []byte(sb.String()), 0o600)
}

func writeKubeconfig(path, server string, caPEM []byte, user, token string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: %s@testenv
  context:
    cluster: testenv
    user: %s
current-context: %s@testenv
`, server, base64.StdEncoding.EncodeToString(caPEM), user, token, user, user, user)
	return os.WriteFile(path, []byte(cfg), 0o600)
}
