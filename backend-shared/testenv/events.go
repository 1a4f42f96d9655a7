package testenv

import "k8s.io/client-go/tools/record"

// Recorded takes what rec recorded so far, each Event as "<type> <reason> <message>".
func Recorded(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
