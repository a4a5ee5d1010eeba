// Package failover runs the operator binary as replicas with leader
// election against a control plane the test runs itself (etcd and
// kube-apiserver, killable and restartable on the same data) and the
// EC2 emulator, and checks failover and restarts from independent
// evidence: the emulator's ENIs and call log (each replica signs with an
// access key ID of its own), the API server's objects and its audit log
// (each replica has a client certificate of its own) — never from the
// operator's own logs or metrics.
package failover
