// Package migration runs docs/migration.md's procedures against a
// real API server and the EC2 emulator, with each original project's
// state seeded exactly as it leaves it, and checks the switch from
// independent evidence (the emulator's call log and objects, the API
// server's objects): no interface detached, no tag lost, no pod stuck.
package migration
