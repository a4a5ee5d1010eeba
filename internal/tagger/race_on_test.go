//go:build race

package tagger_test

// raceDetector tells whether the tests run with the race detector,
// which slows every goroutine severalfold.
const raceDetector = true
